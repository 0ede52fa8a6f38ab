--- Scenario: :AgentEditApplyPatch gives up waiting (the API's TIMEOUT) while the server still
--- applies the patch. The message must not say "nothing changed": the patch lands.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('a.txt', 'alpha\nbeta\ngamma\n')
  H.setup()
  local ae = require('agent_edit')
  local buf = H.open('a.txt')
  data.read = ae.read({ path = 'a.txt' })
  vim.fn.setreg(
    'p',
    '*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n*** End Patch\n'
  )
  ae.config.timeout_ms = 1 -- the call gives up long before the server answers
  data.result = ae.apply_patch_command({ args = 'p' })
  ae.config.timeout_ms = 10000
  H.wait(function()
    return H.lines(buf)[2] == 'BETA'
  end, 'the patch to land')
  data.lines = H.lines(buf)
end)
