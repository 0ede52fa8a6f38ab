--- agent_edit.health: `:checkhealth agent_edit`.
---
--- Reports the Neovim version against the minimum, the server command and whether it runs, and the
--- server's name and version from its `initialize` answer (starting a server for the current
--- directory just for the check when none runs, and stopping it again).

local M = {}

--- @param v any
--- @return string
local function str(v)
  if v == nil or v == vim.NIL then
    return '?'
  end
  return tostring(v)
end

local function check_nvim(ae)
  local v = vim.version()
  local have = string.format('%d.%d.%d', v.major, v.minor, v.patch)
  local need = table.concat(ae.min_nvim, '.')
  if vim.version.lt(v, ae.min_nvim) then
    vim.health.error('Neovim ' .. have .. ' is older than the minimum ' .. need, {
      'upgrade Neovim; the plugin is tested on 0.11.4',
    })
  else
    vim.health.ok('Neovim ' .. have .. ' (minimum ' .. need .. ')')
  end
end

--- @return vim.lsp.Client?, boolean started_here
local function running_or_started(ae)
  local client = ae.clients()[1]
  if client then
    return client, false
  end
  local id = vim.lsp.start({
    name = ae.name .. '_health',
    cmd = ae.server_cmd(),
    cmd_env = ae.config.cmd_env,
    root_dir = vim.fn.getcwd(),
  }, { attach = false })
  return id and vim.lsp.get_client_by_id(id) or nil, true
end

local function check_server(ae)
  local cmd = ae.server_cmd()
  vim.health.info('server command: ' .. table.concat(cmd, ' '))
  if vim.fn.executable(cmd[1]) ~= 1 then
    vim.health.error(cmd[1] .. ' is not executable', {
      'install the server: pip install agent-edit (or set cmd in setup{})',
    })
    return
  end
  local client, started_here = running_or_started(ae)
  if client == nil then
    vim.health.error('the server did not start', { 'run the command above in a shell to see why' })
    return
  end
  local ready = vim.wait(5000, function()
    return client.initialized or client:is_stopped()
  end, 20)
  if ready and client.initialized then
    local info = client.server_info or {}
    vim.health.ok(string.format('server %s %s is running', str(info.name), str(info.version)))
    local caps = client.server_capabilities or {}
    local provider = caps.executeCommandProvider
    local commands = type(provider) == 'table' and provider.commands or {}
    vim.health.info('server commands: ' .. table.concat(commands, ', '))
  else
    vim.health.error('the server did not answer initialize within 5 s', {
      'see :LspLog, and run the command above in a shell (e.g. is lsp_server importable?)',
    })
  end
  if started_here then
    client:stop(true)
  end
end

function M.check()
  local ae = require('agent_edit')
  vim.health.start('agent-edit')
  check_nvim(ae)
  check_server(ae)
  local attached = 0
  for _, client in ipairs(ae.clients()) do
    attached = attached + vim.tbl_count(client.attached_buffers or {})
    vim.health.info('workspace ' .. str(client.root_dir) .. ' (client ' .. client.id .. ')')
  end
  vim.health.info(attached .. ' buffer(s) attached')
end

return M
