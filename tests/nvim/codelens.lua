--- Scenario: after an agent edit the server's code lenses over the changed lines are shown in the
--- buffer (refreshed on agentEdit/historyChanged), offering undo; its "diff" lens opens the edit's
--- diff and its "undo" lens reverts the edit.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('svc.py', 'def run():\n    return 1\n')
  H.setup()
  local buf = H.open('svc.py')
  local ae = require('agent_edit')
  ae.read({ path = 'svc.py' })
  data.replace = ae.replace({ path = 'svc.py', oldText = 'return 1', newText = 'return 2' })
  local lenses = {}
  vim.wait(2000, function()
    lenses = vim.lsp.codelens.get(buf)
    for _, lens in ipairs(lenses) do
      if lens.command and lens.command.title then
        return true
      end
    end
    return false
  end, 10)
  data.lenses = {}
  for _, lens in ipairs(lenses) do
    table.insert(data.lenses, {
      line = lens.range.start.line,
      title = lens.command and lens.command.title or vim.NIL,
      command = lens.command and lens.command.command or vim.NIL,
    })
  end
  -- What a user sees: the lens text as virtual text on the line.
  data.virt = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })) do
    local details = mark[4]
    if details and details.virt_text then
      local text = {}
      for _, chunk in ipairs(details.virt_text) do
        table.insert(text, chunk[1])
      end
      table.insert(data.virt, { line = mark[2], text = table.concat(text) })
    end
  end
  -- Running the lenses as a user would (vim.lsp.codelens.run ends in client:exec_cmd).
  local client = H.wait_attached(buf)
  local function run(title)
    for _, lens in ipairs(lenses) do
      if lens.command and lens.command.title == title then
        client:exec_cmd(lens.command, { bufnr = buf })
        return true
      end
    end
    return false
  end
  local win = vim.api.nvim_get_current_win()
  data.ran_diff = run('diff')
  data.diff_view = H.current_view()
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_set_current_buf(buf)
  data.ran_undo = run('undo')
  vim.wait(2000, function()
    return H.lines(buf)[2] == '    return 1'
  end, 10)
  data.after_undo = H.lines(buf)
end)
