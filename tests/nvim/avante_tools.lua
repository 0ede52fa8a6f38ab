--- Scenario: avante.nvim runs the agent-edit `custom_tools` (the exact call sequence of its
--- process_tool_use, see agent_plugins.lua) while the user has unsaved text in the file: reads
--- see it, an edit lands next to it without saving it, refusals reach the model as the tool's
--- error text, and a call on partial (streaming) input changes nothing.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
local P = dofile(vim.fs.dirname(vim.env.AGENT_EDIT_HARNESS) .. '/agent_plugins.lua')
H.run(function(data)
  H.write_file('lib.lua', 'local a = 1\nlocal b = 2\nreturn a + b\n')
  H.write_file('clean.lua', 'return 1\n')
  H.setup()
  -- Open with no unsaved changes: saved after the edit, as save_after_edit = "clean" says.
  local clean = H.open('clean.lua')
  local buf = H.open('lib.lua')
  H.type(buf, 'Go-- typed by the user')
  data.modified_before = vim.bo[buf].modified
  vim.cmd('enew')
  vim.bo.buftype = 'nofile'
  vim.bo.filetype = 'Avante'

  -- As a user configures it: custom_tools = function() return require("agent_edit.avante").tools() end
  local tools = P.avante_tools(function()
    return require('agent_edit.avante').tools()
  end)
  data.tools = {}
  for _, t in ipairs(tools) do
    table.insert(data.tools, { name = t.name, param = t.param, returns = t.returns })
  end
  local function call(name, input, extra)
    return P.avante_call(tools, { name = name, input = input }, extra)
  end
  local function state()
    return { lines = H.lines(buf), modified = vim.bo[buf].modified, disk = H.read_file('lib.lua') }
  end

  local approve, reason = true, nil
  data.asked = P.avante_confirm(function()
    return approve, reason
  end)
  data.read = call('agent_edit_read', { path = 'lib.lua' })
  -- While the model still streams the call, avante runs the tool on the input so far.
  data.streaming = call(
    'agent_edit_replace',
    { path = 'lib.lua', oldText = 'local a = 1', newText = 'local a = 1' .. '0' },
    { streaming = true }
  )
  data.after_streaming = state()
  data.replace = call('agent_edit_replace', { path = 'lib.lua', oldText = 'local a = 1', newText = 'local a = 10' })
  data.after_replace = state()
  data.read2 = call('agent_edit_read', { path = 'lib.lua' })
  H.type(buf, 'ggA -- user again')
  data.stale = call('agent_edit_replace', { path = 'lib.lua', oldText = 'local b = 2', newText = 'local b = 20' })
  data.read3 = call('agent_edit_read', { path = 'lib.lua' })
  data.no_match = call('agent_edit_replace', { path = 'lib.lua', oldText = 'local c = 3', newText = 'local c = 30' })
  data.patch = call('agent_edit_apply_patch', {
    patch = '*** Begin Patch\n*** Update File: lib.lua\n@@\n-local b = 2\n+local b = 20\n*** End Patch\n',
  })
  data.after_patch = state()
  data.write = call('agent_edit_write', { path = 'new.txt', text = 'new\n' })
  data.clean = call('agent_edit_replace', { path = 'clean.lua', oldText = 'return 1', newText = 'return 2' })
  data.after_clean = { lines = H.lines(clean), modified = vim.bo[clean].modified, disk = H.read_file('clean.lua') }
  data.history = call('agent_edit_history', { format = 'json' })
  data.undo = call('agent_edit_undo', { editId = 999 })
  -- The user says no in avante's confirmation.
  approve, reason = false, 'not this one'
  data.declined = call('agent_edit_write', { path = 'declined.txt', text = 'no\n' })
  data.declined_file = H.read_file('declined.txt') or vim.NIL
end)
