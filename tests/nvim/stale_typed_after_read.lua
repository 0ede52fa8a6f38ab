--- Scenario: the agent read the file, then the user typed into the buffer; the agent's replace
--- (computed from what it read) is refused by the server as STALE, and the user's text is intact.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('config.ts', 'export const port = 8080;\nexport const host = "localhost";\n')
  H.setup()
  local buf = H.open('config.ts')
  local ae = require('agent_edit')
  data.read = ae.read({ path = 'config.ts' })
  H.type(buf, 'ggA // user was here')
  data.typed = H.lines(buf)
  -- Read-before-edit: no expect given, the session's read is the precondition.
  data.implicit = ae.replace({
    path = 'config.ts',
    oldText = 'export const host = "localhost";',
    newText = 'export const host = "0.0.0.0";',
  })
  -- An explicit expect with the version the agent read.
  data.explicit = ae.replace({
    path = 'config.ts',
    oldText = 'export const host = "localhost";',
    newText = 'export const host = "0.0.0.0";',
    expect = { version = data.read.version },
  })
  data.lines = H.lines(buf)
end)
