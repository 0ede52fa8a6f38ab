--- Scenario: two workspaces open, the current directory's and another. The server of the
--- current directory's workspace exits; an agent's next call with a relative path goes to that
--- workspace again (its server is started again), not to the other one still running, where
--- the same relative path names another file.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('README.md', 'this workspace\n')
  local other = vim.fs.normalize(H.root .. '/../other')
  vim.fn.mkdir(other .. '/.git', 'p')
  local f = assert(io.open(other .. '/README.md', 'wb'))
  f:write('the other workspace\n')
  f:close()
  H.setup()
  local ae = require('agent_edit')
  local here = H.open('README.md')
  vim.cmd.edit(vim.fn.fnameescape(other .. '/README.md'))
  H.wait_attached(vim.api.nvim_get_current_buf())
  vim.api.nvim_set_current_buf(here)
  data.before = ae.read({ path = 'README.md' })
  local client = vim.lsp.get_clients({ name = 'agent_edit', bufnr = here })[1]
  client:stop(true)
  H.wait(function()
    return client:is_stopped()
  end, 'the server to stop')
  data.after = ae.read({ path = 'README.md' })
end)
