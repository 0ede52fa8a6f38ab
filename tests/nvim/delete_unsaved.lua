--- Scenario: a patch deletes a file whose open buffer holds the user's unsaved text. Neovim
--- deletes the file, then the buffer with `force`, which would discard that text: the plugin's
--- handler refuses the edit before anything is applied. A clean buffer's file is deleted.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('a.txt', 'alpha\nbeta\n')
  H.write_file('c.txt', 'clean\n')
  H.setup()
  local ae = require('agent_edit')
  local buf = H.open('a.txt')
  H.type(buf, 'ggA typed by the user')
  data.read = ae.read({ path = 'a.txt' })
  data.patch = ae.apply_patch({ patch = '*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n' })
  local alive = vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_is_loaded(buf)
  data.loaded = alive
  data.lines = alive and H.lines(buf) or vim.NIL
  data.modified = alive and vim.bo[buf].modified
  data.disk_a = H.read_file('a.txt') or vim.NIL
  -- Control: an open buffer without unsaved text is deleted with its file.
  H.open('c.txt')
  data.clean = ae.apply_patch({ patch = '*** Begin Patch\n*** Delete File: c.txt\n*** End Patch\n' })
  data.disk_c = H.read_file('c.txt') or vim.NIL
end)
