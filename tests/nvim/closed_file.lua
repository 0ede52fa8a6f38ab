--- Scenario: an agent plugin edits before the user opened any file: the API starts the server for
--- the current directory's workspace, the file is read from disk, and the edit lands in a buffer
--- that the plugin saves (it held no user text), so the disk shows it too.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('pkg/mod.py', 'VALUE = 1\n')
  H.setup()
  local ae = require('agent_edit')
  data.read = ae.read({ path = 'pkg/mod.py' })
  data.replace = ae.replace({ path = 'pkg/mod.py', oldText = 'VALUE = 1', newText = 'VALUE = 2' })
  data.disk = H.read_file('pkg/mod.py')
  local b = H.buffer_of('pkg/mod.py')
  data.buffer = b and H.lines(b) or vim.NIL
  if b then
    data.modified = vim.bo[b].modified
  end
  data.clients = #ae.clients()
end)
