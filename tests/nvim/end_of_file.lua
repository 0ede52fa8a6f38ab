--- Scenario: edits at the very end of a document land exactly (Neovim's own apply adds an empty
--- line for an insertion after the final newline and for text inserted into a just-created file;
--- the plugin rewrites those into equivalent edits it applies correctly).
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('list.txt', 'one\ntwo\n')
  H.setup()
  local buf = H.open('list.txt')
  local ae = require('agent_edit')
  ae.read({ path = 'list.txt' })
  data.append = ae.replace({ path = 'list.txt', oldText = 'two\n', newText = 'two\nthree\n' })
  data.appended = H.lines(buf)
  data.appended_disk = H.read_file('list.txt')
  data.create = ae.write({ path = 'fresh/new.txt', text = 'alpha\nbeta\n' })
  data.created_disk = H.read_file('fresh/new.txt') or vim.NIL
  local b = H.buffer_of('fresh/new.txt')
  data.created_buffer = b and H.lines(b) or vim.NIL
end)
