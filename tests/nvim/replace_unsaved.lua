--- Scenario: the agent replaces text in a buffer that is open, modified by the user and unsaved.
--- The edit lands in the buffer next to the user's unsaved text; the disk is not written behind the
--- user's back (the buffer held unsaved user text before the edit).
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('app.py', 'x = 1\ny = 2\n')
  H.setup()
  local buf = H.open('app.py')
  H.type(buf, 'Go# typed by the user')
  data.modified_before = vim.bo[buf].modified
  local ae = require('agent_edit')
  data.read = ae.read({ path = 'app.py' })
  data.replace = ae.replace({ path = 'app.py', oldText = 'x = 1', newText = 'x = 10' })
  data.lines = H.lines(buf)
  data.modified_after = vim.bo[buf].modified
  data.disk = H.read_file('app.py')
end)
