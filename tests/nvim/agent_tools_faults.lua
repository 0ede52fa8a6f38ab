--- Scenario: the agent plugin tools under faults, each made deterministic with a hook: the
--- server never answers (a TIMEOUT reaches the model, a late answer afterwards is dropped, the
--- plugin's output callback runs once), the client layer throws (a CLIENT_ERROR result, not a
--- hang), arguments that are not an object, text that is not UTF-8 (refused before sending:
--- the server could only answer it with a parse error that has no id), and codecompanion's
--- approval, rejection and cancellation paths.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
local P = dofile(vim.fs.dirname(vim.env.AGENT_EDIT_HARNESS) .. '/agent_plugins.lua')
H.run(function(data)
  H.write_file('app.py', 'x = 1\n')
  H.setup()
  local buf = H.open('app.py')
  local client = H.wait_attached(buf)
  local config = P.codecompanion_setup({ timeout_ms = 150, require_approval_before = true })
  local chat = P.codecompanion_chat()
  local function call(name, arguments, hooks)
    return P.codecompanion_call(config, chat, name, arguments, hooks)
  end
  data.approval = {}
  for name, cfg in pairs(config.interactions.chat.tools) do
    if name ~= 'groups' and name ~= 'opts' then
      data.approval[name] = cfg.opts.require_approval_before
    end
  end

  -- The server never answers: the request is held by the hook.
  local real_request = client.request
  local held
  client.request = function(self, method, params, handler, bufnr)
    if method == 'workspace/executeCommand' then
      held = handler
      return true, 424242
    end
    return real_request(self, method, params, handler, bufnr)
  end
  data.timeout = call('agent_edit_replace', '{"path": "app.py", "oldText": "x = 1", "newText": "x = 2"}')
  client.request = real_request
  local outputs_before = #chat.outputs
  data.held = held ~= nil
  -- The answer arrives after the timeout was reported: nothing more reaches the chat.
  if held then
    held(nil, { ok = true, editId = 77, status = 'applied' })
  end
  data.outputs_after_late = #chat.outputs - outputs_before

  -- The client layer throws.
  local ae = require('agent_edit')
  local real_pick = ae.pick_client
  ae.pick_client = function()
    error('boom from a hook')
  end
  data.thrown = call('agent_edit_read', '{"path": "app.py"}')
  ae.pick_client = real_pick

  data.not_object = call('agent_edit_read', '"app.py"')
  data.array = call('agent_edit_read', '["app.py"]')
  -- An adapter that hands the arguments as a Lua table can hand bytes JSON cannot carry.
  data.bad_utf8 = call('agent_edit_replace', { path = 'app.py', oldText = 'x = 1', newText = 'x = \255' })
  local tools = require('agent_edit.avante').tools()
  data.avante_bad_utf8 = P.avante_call(tools, {
    name = 'agent_edit_write',
    input = { path = 'bad\192.txt', text = 'x' },
  })
  data.avante_not_object = P.avante_call(tools, { name = 'agent_edit_read', input = 'app.py' })

  -- codecompanion's approval paths call these output handlers instead of cmds.
  local cfg = config.interactions.chat.tools.agent_edit_replace
  local tool = vim.deepcopy(cfg.callback())
  tool.args = { path = 'app.py', oldText = 'x = 1', newText = 'x = 3' }
  data.prompt = tool.output.prompt(tool, { tools = { chat = chat } })
  tool.output.rejected(tool, { tools = { chat = chat }, opts = { reason = 'not now' } })
  data.rejected = chat.outputs[#chat.outputs]
  tool.output.cancelled(tool, { tools = { chat = chat } })
  data.cancelled = chat.outputs[#chat.outputs]

  -- The user types while the edit is on its way (inside the applyEdit round trip): the plugin's
  -- handler refuses it, and the model is told why.
  local apply_edit = require('agent_edit.apply_edit')
  local real_handler = apply_edit.handler
  apply_edit.handler = function(err, params, ctx)
    H.type(buf, 'Go# typed during the round trip')
    return real_handler(err, params, ctx)
  end
  call('agent_edit_read', '{"path": "app.py"}')
  data.race = call('agent_edit_replace', '{"path": "app.py", "oldText": "x = 1", "newText": "x = 4"}')
  apply_edit.handler = real_handler

  data.lines = H.lines(buf)
  data.disk = H.read_file('app.py')
  data.bad_file = H.read_file('bad\192.txt') or vim.NIL
end)
