--- Scenario: one V4A patch adds a file, updates an open buffer, renames (with an update) another
--- open buffer and deletes a third; all of it shows up as buffers and as files.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('src/alpha.txt', 'alpha\nkeep\n')
  H.write_file('src/beta.txt', 'beta\nkeep\n')
  H.write_file('src/gamma.txt', 'gamma\n')
  H.setup()
  H.open('src/alpha.txt')
  H.open('src/beta.txt')
  H.open('src/gamma.txt')
  local patch = table.concat({
    '*** Begin Patch',
    '*** Add File: src/delta.txt',
    '+delta',
    '+new',
    '*** Update File: src/alpha.txt',
    '@@',
    '-alpha',
    '+ALPHA',
    ' keep',
    '*** Update File: src/beta.txt',
    '*** Move to: lib/beta2.txt',
    '@@',
    '-beta',
    '+BETA',
    ' keep',
    '*** Delete File: src/gamma.txt',
    '*** End Patch',
  }, '\n') .. '\n'
  data.result = require('agent_edit').apply_patch({ patch = patch })
  local function state(rel)
    local b = H.buffer_of(rel)
    return { buffer = b and H.lines(b) or vim.NIL, disk = H.read_file(rel) or vim.NIL }
  end
  data.files = {
    alpha = state('src/alpha.txt'),
    beta = state('src/beta.txt'),
    beta2 = state('lib/beta2.txt'),
    gamma = state('src/gamma.txt'),
    delta = state('src/delta.txt'),
  }
end)
