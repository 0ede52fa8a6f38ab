--- Scenario: the server is SIGKILLed while an agent plugin's edit is in flight (a hook kills it
--- as the edit reaches the editor). The pending tool call is answered at once by the exit
--- (NO_SERVER, the edit may have landed), not left to its timeout; the next tool call starts a
--- new server that is given the open buffers (their unsaved text), never the files on disk.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
local P = dofile(vim.fs.dirname(vim.env.AGENT_EDIT_HARNESS) .. '/agent_plugins.lua')
H.run(function(data)
  H.write_file('app.py', 'x = 1\n')
  H.setup()
  local buf = H.open('app.py')
  H.type(buf, 'Go# unsaved, typed before the crash')
  local client = H.wait_attached(buf)
  -- Longer than the driver waits for an answer: only the exit can answer in time.
  local config = P.codecompanion_setup({ timeout_ms = 60000 })
  local chat = P.codecompanion_chat()
  local function call(name, arguments)
    return P.codecompanion_call(config, chat, name, arguments)
  end
  local server_pids = vim.api.nvim_get_proc_children(vim.fn.getpid())
  data.server_pids = #server_pids
  local apply_edit = require('agent_edit.apply_edit')
  local real_handler = apply_edit.handler
  apply_edit.handler = function(err, params, ctx)
    for _, pid in ipairs(server_pids) do
      if pid > 1 then
        vim.uv.kill(pid, 'sigkill')
      end
    end
    return real_handler(err, params, ctx)
  end
  data.killed = call('agent_edit_replace', '{"path": "app.py", "oldText": "x = 1", "newText": "x = 4"}')
  apply_edit.handler = real_handler
  data.after_kill = H.lines(buf)
  data.stopped = client:is_stopped()
  data.read = call('agent_edit_read', '{"path": "app.py"}')
  data.edit = call('agent_edit_replace', '{"path": "app.py", "oldText": "x = 4", "newText": "x = 5"}')
  data.lines = H.lines(buf)
  data.disk = H.read_file('app.py')
  data.clients = #require('agent_edit').clients({ bufnr = buf })
  -- The synchronous API right after a crash, before Neovim has dropped the dead client from its
  -- list: it must start a new server, not send to the dead one.
  local second = H.wait_attached(buf)
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    if pid > 1 then
      vim.uv.kill(pid, 'sigkill')
    end
  end
  H.wait(function()
    return second:is_stopped()
  end, 'the second server to stop')
  data.sync_read = require('agent_edit').read({ path = 'app.py' })
  -- A synchronous edit in flight when the server dies is answered by the exit too, not after its
  -- timeout (a whole 20 s here).
  local third = H.wait_attached(buf)
  data.third_pids = #vim.api.nvim_get_proc_children(vim.fn.getpid())
  apply_edit.handler = function(err, params, ctx)
    for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
      if pid > 1 then
        vim.uv.kill(pid, 'sigkill')
      end
    end
    return real_handler(err, params, ctx)
  end
  data.sync_killed = require('agent_edit').replace(
    { path = 'app.py', oldText = 'x = 5', newText = 'x = 6' },
    { timeout_ms = 20000 }
  )
  apply_edit.handler = real_handler
  data.third_stopped = third:is_stopped()
end)
