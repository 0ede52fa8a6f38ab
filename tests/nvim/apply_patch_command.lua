--- Scenario: :AgentEditApplyPatch applies a patch a person has: from a register (with prose
--- around it), from the current buffer, refused as a whole when one hunk does not match, and a
--- register without a patch; each result as the command returns it, the buffers, the disk, and
--- the history.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('one.txt', 'one\n')
  H.write_file('two.txt', 'two\n')
  H.setup()
  local one = H.open('one.txt')
  local ae = require('agent_edit')
  -- From a register: a chat answer with the patch inside a code fence.
  vim.fn.setreg('a', table.concat({
    'Here is the change:',
    '```',
    '*** Begin Patch',
    '*** Update File: one.txt',
    '@@',
    '-one',
    '+ONE',
    '*** Add File: three.txt',
    '+three',
    '*** End Patch',
    '```',
  }, '\n'))
  data.from_register = ae.apply_patch_command({ args = 'a', range = 0 })
  data.one_buffer = H.lines(one)
  data.three_disk = H.read_file('three.txt') or vim.NIL
  data.diff_buffer = vim.api.nvim_buf_get_name(0)
  data.diff_lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  -- From the current buffer: a scratch buffer holding a patch whose second hunk fails.
  vim.cmd('enew')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, {
    '*** Begin Patch',
    '*** Update File: two.txt',
    '@@',
    '-two',
    '+TWO',
    '*** Update File: one.txt',
    '@@',
    '-not there',
    '+x',
    '*** End Patch',
  })
  data.refused = ae.apply_patch_command({ args = '', range = 0 })
  data.two_disk_after_refused = H.read_file('two.txt')
  -- The same buffer, fixed, through the command as a user types it.
  vim.api.nvim_buf_set_lines(0, 5, 9, false, {})
  vim.cmd('AgentEditApplyPatch')
  data.two_disk = H.read_file('two.txt')
  data.two_buffer = H.buffer_of('two.txt') and H.lines(H.buffer_of('two.txt')) or vim.NIL
  -- A register with no patch in it.
  vim.fn.setreg('b', 'just words')
  data.no_patch = ae.apply_patch_command({ args = 'b', range = 0 })
  local h = ae.history({ format = 'json' })
  data.history = {}
  for _, e in ipairs(h.entries or {}) do
    table.insert(data.history, { action = e.action, outcome = e.outcome })
  end
end)
