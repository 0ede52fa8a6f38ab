--- Scenario: a repository nested in the workspace (a submodule, a vendored repo). Its files
--- get a server of their own (their nearest .git), and the workspace's server must still see
--- their buffers: an agent working from the workspace reads the user's unsaved text, not the
--- disk. Commands keep going to the right server: relative paths and code lenses of a nested
--- file belong to its own workspace's, a lens of the enclosing server's edit to that server.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('main.txt', 'main\n')
  H.write_file('vendor/lib/x.c', 'int x = 1;\nint y = 2;\n')
  H.write_file('vendor/lib/z.c', 'int z = 1;\n')
  vim.fn.mkdir(H.root .. '/vendor/lib/.git', 'p')
  H.setup({ save_after_edit = 'never' })
  local ae = require('agent_edit')
  -- The nested file first (its server starts), then a workspace file (the workspace's starts).
  local x = H.open('vendor/lib/x.c')
  H.type(x, 'ggf1s100')
  local main = H.open('main.txt')
  local main_client = vim.lsp.get_clients({ name = 'agent_edit', bufnr = main })[1]
  -- A nested file opened while both servers run.
  local z = H.open('vendor/lib/z.c')
  H.type(z, 'ggf1s5')
  vim.api.nvim_set_current_buf(main)
  vim.wait(1000, function()
    return vim.lsp.buf_is_attached(z, main_client.id)
  end, 5)
  data.read_x = ae.read({ path = 'vendor/lib/x.c' })
  data.read_z = ae.read({ path = 'vendor/lib/z.c' })
  -- The workspace's server edits x.c (its edit 1).
  data.main_edit =
    ae.replace({ path = 'vendor/lib/x.c', oldText = 'int y = 2;', newText = 'int y = 3;' })
  -- From x.c's buffer a relative path is its own workspace's (the nested server's edit 1).
  data.own_read = ae.read({ path = 'x.c' }, { bufnr = x })
  data.own_edit = ae.replace(
    { path = 'x.c', oldText = 'int x = 100;', newText = 'int x = 200;' },
    { bufnr = x }
  )
  data.after_edits = H.lines(x)
  -- The code lens "undo" of the workspace server's edit 1, run from x.c's buffer.
  main_client.commands['agentEdit.undo'](
    { title = 'undo', command = 'agentEdit.undo', arguments = { { editId = 1 } } },
    { bufnr = x, client_id = main_client.id }
  )
  H.wait(function()
    return H.lines(x)[2] == 'int y = 2;' or H.lines(x)[1] == 'int x = 100;'
  end, 'the lens undo')
  data.after_undo = H.lines(x)
  data.disk_x = H.read_file('vendor/lib/x.c')
end)
