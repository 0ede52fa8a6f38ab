--- Scenario: the server computed an edit at the buffer's current version, and the user typed
--- before the edit arrived (the keystroke happens inside the applyEdit round trip). The plugin's
--- applyEdit handler must refuse it (Neovim's own would skip it silently and answer applied=true);
--- the agent gets a refusal and the user's text is intact.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('notes.md', '# Notes\nfirst\nsecond\n')
  H.setup()
  local buf = H.open('notes.md')
  local ae = require('agent_edit')
  local apply_edit = require('agent_edit.apply_edit')
  local real = apply_edit.handler
  data.handler_answers = {}
  apply_edit.handler = function(err, params, ctx)
    -- The user's keystroke lands between the server's computation and the edit's arrival.
    H.type(buf, 'Go typed during the round trip')
    local answer = real(err, params, ctx)
    table.insert(data.handler_answers, answer)
    return answer
  end
  data.read = ae.read({ path = 'notes.md' })
  data.replace = ae.replace({ path = 'notes.md', oldText = 'first', newText = 'FIRST' })
  apply_edit.handler = real
  data.lines = H.lines(buf)
end)
