--- Scenario: API arguments that cannot be encoded as JSON (a boolean key, a function value).
--- Neovim raises while encoding the request; the API answers INVALID_ARGUMENT, the synchronous
--- call returns it (no Lua error thrown at the agent plugin) and a callback is called once.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('a.txt', 'a\n')
  H.setup()
  local ae = require('agent_edit')
  H.open('a.txt')
  local ok, result = pcall(ae.read, { path = 'a.txt', [true] = 1 })
  data.sync_ok = ok
  data.sync = ok and result or tostring(result)
  data.calls = {}
  ae.replace({ path = 'a.txt', oldText = 'a', newText = function() end }, {
    timeout_ms = 300,
    callback = function(r)
      table.insert(data.calls, r)
    end,
  })
  vim.wait(1000, function()
    return false
  end)
end)
