--- Scenario: a patch moves a file whose open buffer holds the user's unsaved text. Neovim's
--- rename writes the buffer to the new name (:saveas!), which would persist that text behind the
--- user's back: the plugin's handler refuses the edit before anything is applied.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('a.txt', 'alpha\nbeta\ngamma\n')
  H.setup()
  local ae = require('agent_edit')
  local buf = H.open('a.txt')
  H.type(buf, 'ggA typed by the user')
  data.read = ae.read({ path = 'a.txt' })
  data.patch = ae.apply_patch({
    patch = '*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n beta\n'
      .. '-gamma\n+GAMMA\n*** End Patch\n',
  })
  data.lines = H.lines(buf)
  data.name = vim.api.nvim_buf_get_name(buf)
  data.modified = vim.bo[buf].modified
  data.disk_a = H.read_file('a.txt')
  data.disk_b = H.read_file('b.txt') or vim.NIL
end)
