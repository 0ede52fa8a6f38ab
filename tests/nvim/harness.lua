--- Harness shared by the Neovim scenario drivers (tests/nvim/*.lua), loaded with dofile().
---
--- Owns: putting the plugin on 'runtimepath', starting agent-edit through the plugin with the
--- repo's server, helpers that act like a user (open, type) and wait for the LSP client, and
--- writing the scenario's observations (plus :messages and any Lua error) as JSON to
--- $AGENT_EDIT_OUT before quitting. Scenarios record facts; tests/clients/test_neovim.py asserts on them.

local H = {}

H.out = assert(os.getenv('AGENT_EDIT_OUT'), 'AGENT_EDIT_OUT not set')
H.plugin = assert(os.getenv('AGENT_EDIT_PLUGIN'), 'AGENT_EDIT_PLUGIN not set')
H.python = assert(os.getenv('AGENT_EDIT_PYTHON'), 'AGENT_EDIT_PYTHON not set')
H.root = vim.fn.getcwd()

--- What the scenario observed; written to $AGENT_EDIT_OUT.
H.data = {}

vim.opt.runtimepath:prepend(H.plugin)
vim.o.hidden = true
vim.o.swapfile = false
vim.lsp.log.set_level(vim.log.levels.WARN)

--- @param extra table? options merged over the harness defaults
function H.setup(extra)
  require('agent_edit').setup(vim.tbl_extend('force', {
    cmd = { H.python, '-m', 'lsp_server', 'serve' },
  }, extra or {}))
end

--- @param cond fun(): boolean
--- @param what string
--- @param ms integer?
function H.wait(cond, what, ms)
  if not vim.wait(ms or 5000, cond, 5) then
    error('timed out waiting for ' .. what, 2)
  end
end

--- @param bufnr integer
--- @return vim.lsp.Client
function H.wait_attached(bufnr)
  local client
  H.wait(function()
    client = vim.lsp.get_clients({ name = 'agent_edit', bufnr = bufnr })[1]
    return client ~= nil and client.initialized == true
  end, 'agent-edit to attach to buffer ' .. bufnr)
  return client
end

--- Writes a file on disk (relative to the workspace).
--- @param rel string
--- @param text string
function H.write_file(rel, text)
  local path = H.root .. '/' .. rel
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
end

--- @param rel string
--- @return string? text, nil when the file does not exist
function H.read_file(rel)
  local f = io.open(H.root .. '/' .. rel, 'rb')
  if not f then
    return nil
  end
  local text = f:read('*a')
  f:close()
  return text
end

--- Opens a file like a user (`:edit`) and waits until agent-edit is attached.
--- @param rel string
--- @return integer bufnr
function H.open(rel)
  vim.cmd.edit(vim.fn.fnameescape(rel))
  local bufnr = vim.api.nvim_get_current_buf()
  H.wait_attached(bufnr)
  return bufnr
end

--- Types in normal mode like a user: `keys` go through :normal! in the buffer.
--- @param bufnr integer
--- @param keys string e.g. 'Go# user note'
function H.type(bufnr, keys)
  vim.api.nvim_buf_call(bufnr, function()
    vim.cmd('normal! ' .. keys)
  end)
end

--- @param bufnr integer
--- @return string[]
function H.lines(bufnr)
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

--- The loaded buffer showing a workspace file, or nil.
--- @param rel string
--- @return integer?
function H.buffer_of(rel)
  local want = vim.fs.normalize(H.root .. '/' .. rel)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.fs.normalize(vim.api.nvim_buf_get_name(b)) == want then
      return b
    end
  end
  return nil
end

--- The current buffer's lines and name (for views).
--- @return table
function H.current_view()
  local b = vim.api.nvim_get_current_buf()
  return {
    name = vim.api.nvim_buf_get_name(b),
    filetype = vim.bo[b].filetype,
    buftype = vim.bo[b].buftype,
    lines = H.lines(b),
  }
end

--- Stops every LSP client (the server process must not outlive the test).
local function stop_clients()
  local clients = vim.lsp.get_clients()
  for _, c in ipairs(clients) do
    c:stop()
  end
  local stopped = vim.wait(2000, function()
    for _, c in ipairs(clients) do
      if not c:is_stopped() then
        return false
      end
    end
    return true
  end, 10)
  if not stopped then
    for _, c in ipairs(clients) do
      c:stop(true)
    end
    vim.wait(500, function()
      return false
    end)
  end
end

--- Runs the scenario, then writes the observations and quits Neovim, whatever happened.
--- @param scenario fun(data: table)
function H.run(scenario)
  local t0 = vim.uv.hrtime()
  local ok, err = xpcall(scenario, debug.traceback, H.data)
  H.data.scenario_ms = (vim.uv.hrtime() - t0) / 1e6
  if not ok then
    H.data.lua_error = tostring(err)
  end
  -- Let anything scheduled by the last step (callbacks, notifications) run before :messages.
  vim.wait(50, function()
    return false
  end)
  H.data.messages = vim.api.nvim_exec2('messages', { output = true }).output
  H.data.v_errmsg = vim.v.errmsg
  stop_clients()
  local encoded_ok, encoded = pcall(vim.json.encode, H.data)
  if not encoded_ok then
    encoded = vim.json.encode({ lua_error = 'cannot encode observations: ' .. tostring(encoded) })
  end
  local f = assert(io.open(H.out, 'wb'))
  f:write(encoded)
  f:close()
  vim.cmd('qall!')
end

return H
