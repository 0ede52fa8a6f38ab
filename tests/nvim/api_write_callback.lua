--- Scenario: the API's callback variant and `write`: an agent creates a file that is not open
--- (it appears as a file and a buffer), reads it back asynchronously, and gets a result table for a
--- malformed call instead of a Lua error.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('README.txt', 'workspace\n')
  H.setup()
  H.open('README.txt')
  local ae = require('agent_edit')
  data.write = ae.write({ path = 'docs/new.txt', text = 'hello\nworld\n' })
  data.disk = H.read_file('docs/new.txt') or vim.NIL
  local b = H.buffer_of('docs/new.txt')
  data.buffer = b and H.lines(b) or vim.NIL
  local got
  local returned = ae.read({ path = 'docs/new.txt' }, {
    callback = function(result)
      got = result
    end,
  })
  data.callback_returned = returned == nil
  H.wait(function()
    return got ~= nil
  end, 'the read callback')
  data.async_read = got
  data.malformed = ae.replace({ path = 'docs/new.txt', oldText = 42 })
end)
