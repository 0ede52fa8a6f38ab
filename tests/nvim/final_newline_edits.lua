--- Scenario: edits that remove or add a buffer's final newline. Neovim keeps a file's final
--- newline in 'eol', not in its lines, and its didChange counts a line break after the last line
--- whatever 'eol' says. The buffer must end up as the server asked (lines and 'eol'), the server
--- must see that text (no PARTIAL or UNVERIFIED), the save must write exactly it, and undo must
--- restore the final newline.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  local cases = {
    -- name, file, how
    { 'write', 'x\n', { text = 'y' } },
    { 'empty', '', { text = 'hello' } },
    { 'newline_only', '\n', { text = '' } },
    { 'crlf', 'a\r\nb\r\n', { text = 'a\r\nb' } },
    { 'replace', 'one\ntwo\n', { oldText = 'two\n', newText = 'two' } },
    { 'kept', 'one\ntwo\n', { oldText = 'two\n', newText = 'TWO\n' } },
    { 'added', 'x', { text = 'y\n' } },
    { 'added_by_replace', 'one\ntwo', { oldText = 'two', newText = 'two\n' } },
    { 'appended_no_newline', 'one\ntwo', { oldText = 'two', newText = 'two\nthree' } },
    { 'into_empty', '', { text = 'hello\n' } },
    { 'newline_into_empty', '', { text = '\n' } },
    { 'empty_line_kept', 'a\n\n', { oldText = 'a', newText = 'A' } },
  }
  H.setup()
  local ae = require('agent_edit')
  for _, c in ipairs(cases) do
    local name, text, how = c[1], c[2], c[3]
    local rel = name .. '.txt'
    H.write_file(rel, text)
    local b = H.open(rel)
    local read = ae.read({ path = rel })
    local args = vim.tbl_extend('force', { path = rel, expect = { sha256 = read.sha256 } }, how)
    local result = how.text and ae.write(args) or ae.replace(args)
    local case = {
      before = read.text,
      result = result,
      lines = H.lines(b),
      eol = vim.bo[b].eol,
      modified = vim.bo[b].modified,
      disk = H.read_file(rel),
      after = ae.read({ path = rel }).text,
    }
    if result.ok then
      case.undo = ae.undo({ editId = result.editId })
      case.undo_lines = H.lines(b)
      case.undo_eol = vim.bo[b].eol
      case.undo_read = ae.read({ path = rel }).text
      case.undo_disk = H.read_file(rel)
    end
    data[name] = case
  end
  -- Neovim's own undo and redo (`u`, CTRL-R) of such an edit: 'eol' follows the lines.
  local function flush(b)
    local client = vim.lsp.get_clients({ name = 'agent_edit', bufnr = b })[1]
    require('vim.lsp._changetracking').flush(client)
  end
  local native = { native_removed = { 'one\ntwo\n', 'one\ntwo' }, native_added = { 'x', 'y\n' } }
  for name, c in pairs(native) do
    local rel = name .. '.txt'
    H.write_file(rel, c[1])
    local b = H.open(rel)
    local read = ae.read({ path = rel })
    local result = ae.write({ path = rel, text = c[2], expect = { sha256 = read.sha256 } })
    local eol_after = vim.bo[b].eol
    H.type(b, 'u')
    H.wait(function()
      return vim.bo[b].eol ~= eol_after
    end, "'eol' restored by u")
    flush(b)
    local undone = { lines = H.lines(b), text = ae.read({ path = rel }).text }
    H.type(b, vim.keycode('<C-r>'))
    H.wait(function()
      return vim.bo[b].eol == eol_after
    end, "'eol' set again by CTRL-R")
    flush(b)
    data[name] = {
      result = result,
      undone = undone,
      redone = { lines = H.lines(b), text = ae.read({ path = rel }).text },
    }
  end
end)
