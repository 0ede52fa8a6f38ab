--- Scenario: codecompanion.nvim's tool system calls the agent-edit chat tools (through the
--- extension, with the exact call sequence of codecompanion's runner, see agent_plugins.lua)
--- while the chat buffer is current and the user has unsaved text in the file: reads see it, an
--- edit lands next to it without saving it, refusals (STALE after typing, NO_MATCH, a malformed
--- argument) reach the model whole, and the other tools run.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
local P = dofile(vim.fs.dirname(vim.env.AGENT_EDIT_HARNESS) .. '/agent_plugins.lua')
H.run(function(data)
  H.write_file('app.py', 'x = 1\ny = 2\n')
  H.setup()
  local buf = H.open('app.py')
  H.type(buf, 'Go# typed by the user')
  data.modified_before = vim.bo[buf].modified
  -- The chat window is where the user is while the model works.
  vim.cmd('enew')
  vim.bo.buftype = 'nofile'
  vim.bo.filetype = 'codecompanion'

  local config = P.codecompanion_setup({})
  local chat_tools = config.interactions.chat.tools
  data.tool_names = vim.tbl_keys(chat_tools)
  data.group = chat_tools.groups.agent_edit
  local chat = P.codecompanion_chat()
  local function call(name, arguments, hooks)
    return P.codecompanion_call(config, chat, name, arguments, hooks)
  end

  -- A mark on the user's own line: a whole-buffer replacement (what the plugins' built-in edit
  -- tools do) would drop it to the top; a real edit of line 1 leaves it where it is.
  local ns = vim.api.nvim_create_namespace('agent_edit_test')
  local mark = vim.api.nvim_buf_set_extmark(buf, ns, 2, 2, {})
  data.read = call('agent_edit_read', '{"path": "app.py"}')
  data.replace = call(
    'agent_edit_replace',
    vim.json.encode({ path = 'app.py', oldText = 'x = 1', newText = 'x = 10' })
  )
  data.after_replace = { lines = H.lines(buf), modified = vim.bo[buf].modified, disk = H.read_file('app.py') }
  data.mark_after_replace = vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {})

  -- The model read, then the user typed, then the model's edit from what it read arrives.
  local read2 = call('agent_edit_read', '{"path": "app.py"}')
  data.read2 = read2
  H.type(buf, 'ggA  # user again')
  data.typed = H.lines(buf)
  data.stale = call(
    'agent_edit_replace',
    vim.json.encode({ path = 'app.py', oldText = 'y = 2', newText = 'y = 20' })
  )
  data.read3 = call('agent_edit_read', '{"path": "app.py"}')
  data.no_match = call(
    'agent_edit_replace',
    vim.json.encode({ path = 'app.py', oldText = 'z = 3', newText = 'z = 30' })
  )
  -- A model's string "true" is not a boolean: refused as such, not read as true.
  data.malformed = call(
    'agent_edit_replace',
    '{"path": "app.py", "oldText": "y = 2", "newText": "y = 20", "replaceAll": "true"}'
  )
  -- JSON null for an optional field is "not given".
  data.with_null = call(
    'agent_edit_replace',
    '{"path": "app.py", "oldText": "y = 2", "newText": "y = 20", "replaceAll": null, "expect": null}'
  )
  data.after_edits = { lines = H.lines(buf), modified = vim.bo[buf].modified, disk = H.read_file('app.py') }

  data.patch = call('agent_edit_apply_patch', vim.json.encode({
    patch = '*** Begin Patch\n*** Add File: notes.md\n+# Notes\n*** End Patch\n',
  }))
  data.write = call('agent_edit_write', vim.json.encode({ path = 'docs/new.txt', text = 'hello\n' }))
  -- No arguments at all (some adapters send none for a tool without required fields), and "".
  data.history_nil = call('agent_edit_history', nil)
  data.history_empty = call('agent_edit_history', '')
  data.history_diff = call('agent_edit_history', '{"format": "diff"}')
  local function edit_id(observed)
    return vim.json.decode(vim.split(observed.output.for_llm, '\n')[1]).editId
  end
  -- The user changed the line of the first edit since: its undo is refused (CONFLICT).
  data.undo_conflict = call('agent_edit_undo', vim.json.encode({ editId = edit_id(data.replace) }))
  data.undo = call('agent_edit_undo', vim.json.encode({ editId = edit_id(data.with_null) }))
  data.after_undo = { lines = H.lines(buf), modified = vim.bo[buf].modified, disk = H.read_file('app.py') }
  data.outputs = chat.outputs
end)
