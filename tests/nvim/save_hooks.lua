--- Scenario: a BufWritePre autocmd (what formatters and whitespace trimmers use) changes the
--- buffer when the plugin saves after an agent edit (agentEdit/saveDocuments). The result must
--- not call the edit's text saved; undo brings back the text from before the edit.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('trim.py', 'p = 0\nq = 0\n')
  vim.api.nvim_create_autocmd('BufWritePre', {
    pattern = '*.py',
    callback = function()
      local view = vim.fn.winsaveview()
      vim.cmd([[keeppatterns silent! %s/\s\+$//e]])
      vim.fn.winrestview(view)
    end,
  })
  H.setup()
  local buf = H.open('trim.py')
  local ae = require('agent_edit')
  ae.read({ path = 'trim.py' })
  data.result = ae.replace({ path = 'trim.py', oldText = 'p = 0', newText = 'p = 1   ' })
  data.buffer = H.lines(buf)
  data.disk = H.read_file('trim.py')
  data.undo = ae.undo({ editId = data.result.editId })
  data.undone_buffer = H.lines(buf)
  data.undone_disk = H.read_file('trim.py')
end)
