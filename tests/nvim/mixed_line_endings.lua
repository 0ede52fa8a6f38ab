--- Scenario: files whose line endings Neovim shows otherwise than LSP counts them. A file with
--- mixed endings opens with 'fileformat=unix' and its CRLF lines end in a CR character (^M):
--- ordinary typing there must keep the server's copy equal to the buffer, and an edit whose
--- text has CRLF lines (Neovim's apply drops those CRs) is refused before anything changes, as
--- is an edit of a buffer holding a CR inside a line (a line break for LSP, not for Neovim),
--- whose typing must keep the server in step too. An edit without CRs in such a file lands.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('mixed.txt', 'a\nb\r\nc\r\nd\r\n')
  H.write_file('lone.txt', 'x\ry\nz\n')
  H.setup({ save_after_edit = 'never' })
  local ae = require('agent_edit')
  local buf = H.open('mixed.txt')
  local function synced(b, rel)
    b, rel = b or buf, rel or 'mixed.txt'
    -- Every change is sent at once, not after Neovim's debounce.
    require('vim.lsp._changetracking').flush(vim.lsp.get_clients({ bufnr = b })[1])
    local text = table.concat(H.lines(b), '\n') .. '\n'
    return ae.read({ path = rel }).text == text
  end
  data.synced = {}
  for _, keys in ipairs({ 'Go', 'ggjddp', 'ggJ', 'gg$x', 'uuuu' }) do
    H.type(buf, keys)
    data.synced[keys] = synced()
  end
  data.lines_before_edits = H.lines(buf)
  -- "a" is an LF line: no CR in the edit's text.
  data.lf_edit = ae.replace({ path = 'mixed.txt', oldText = 'a\n', newText = 'A\n' })
  data.lf_synced = synced()
  -- "c" is a CRLF line: the replacement keeps its CRLF, which Neovim would drop.
  data.crlf_edit = ae.replace({ path = 'mixed.txt', oldText = 'c', newText = 'C' })
  data.lines_after = H.lines(buf)
  local lone = H.open('lone.txt')
  -- Typing after a lone CR: Neovim's line 1 is "z", LSP's line 1 is "y".
  data.lone_synced = {}
  for _, keys in ipairs({ 'GAz', 'ggA!', 'Go' }) do
    H.type(lone, keys)
    data.lone_synced[keys] = synced(lone, 'lone.txt')
  end
  data.lone_edit = ae.replace({ path = 'lone.txt', oldText = 'zz', newText = 'Z' })
  data.lone_lines = H.lines(lone)
end)
