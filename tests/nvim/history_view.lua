--- Scenario: after an agent edit, :AgentEditHistory shows a diff buffer with the edit and the net
--- diff; <CR> on the entry shows that edit's diff; q goes back; a further edit refreshes the open
--- view through agentEdit/historyChanged.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('lib.py', 'def greet():\n    return "hi"\n')
  H.setup()
  local buf = H.open('lib.py')
  local ae = require('agent_edit')
  ae.read({ path = 'lib.py' })
  data.replace =
    ae.replace({ path = 'lib.py', oldText = 'return "hi"', newText = 'return "hello"' })
  vim.cmd('AgentEditHistory')
  data.view = H.current_view()
  local hist_buf = vim.api.nvim_get_current_buf()
  -- The first entry line starts with '#<id>'.
  local entry_line
  for i, l in ipairs(data.view.lines) do
    if l:match('^#%d') or l:match('^#[%w-]+  ') then
      entry_line = entry_line or i
    end
  end
  data.entry_line = entry_line or vim.NIL
  if entry_line then
    vim.api.nvim_win_set_cursor(0, { entry_line, 0 })
    vim.cmd.normal(vim.keycode('<CR>'))
    data.entry_view = H.current_view()
    vim.cmd.normal('q')
    data.back_view_name = vim.api.nvim_buf_get_name(vim.api.nvim_get_current_buf())
  end
  -- Another agent edit while the view is open: the view refreshes itself.
  ae.read({ path = 'lib.py' })
  data.second =
    ae.replace({ path = 'lib.py', oldText = 'def greet():', newText = 'def greet(name):' })
  local refreshed = vim.wait(2000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(hist_buf, 0, -1, false), '\n')
    return text:find('def greet(name):', 1, true) ~= nil
  end, 10)
  data.refreshed = refreshed
  data.refreshed_view = vim.api.nvim_buf_get_lines(hist_buf, 0, -1, false)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(hist_buf))
  vim.cmd.normal('q')
  data.history_buffer_closed = not vim.api.nvim_buf_is_valid(hist_buf)
    or vim.fn.bufwinid(hist_buf) == -1
  data.buffer = H.lines(buf)
end)
