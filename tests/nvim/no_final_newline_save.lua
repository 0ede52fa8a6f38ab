--- Scenario: a file without a final newline, edited by the agent and saved by the plugin
--- (agentEdit/saveDocuments). The server verified the text Neovim sent (no final line break,
--- since 'eol' is off); the save must write exactly that, not add the newline 'fixeol' adds.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('lf.txt', 'one\ntwo')
  H.write_file('crlf.txt', 'one\r\ntwo')
  H.setup()
  local ae = require('agent_edit')
  for _, name in ipairs({ 'lf', 'crlf' }) do
    local rel = name .. '.txt'
    local b = H.open(rel)
    local result = ae.replace({ path = rel, oldText = 'one', newText = 'ONE' })
    local disk = H.read_file(rel)
    data[name] = {
      result = result,
      disk = disk,
      disk_sha256 = vim.fn.sha256(disk),
      -- The user's own setting is left as it was.
      fixeol = vim.bo[b].fixeol,
    }
  end
end)
