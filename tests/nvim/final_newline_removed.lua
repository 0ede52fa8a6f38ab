--- Scenario: edits that leave a buffer without its final newline. Neovim keeps a file's final
--- newline in 'eol', not in its lines: it applied such an edit to the lines and kept sending
--- the newline, so the server saw neither the old nor the new text (PARTIAL, or UNVERIFIED when
--- the text came out unchanged) and the buffer was left changed. The plugin refuses them whole.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  local cases = {
    -- name, file, how
    { 'write', 'x\n', { text = 'y' } },
    { 'empty', '', { text = 'hello' } },
    { 'newline_only', '\n', { text = '' } },
    { 'crlf', 'a\r\nb\r\n', { text = 'a\r\nb' } },
    { 'replace', 'one\ntwo\n', { oldText = 'two\n', newText = 'two' } },
    -- Controls: the final newline kept, or added to a file without one.
    { 'kept', 'one\ntwo\n', { oldText = 'two\n', newText = 'TWO\n' } },
    { 'added', 'x', { text = 'y\n' } },
    { 'into_empty', '', { text = 'hello\n' } },
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
    data[name] = {
      result = result,
      lines = H.lines(b),
      modified = vim.bo[b].modified,
      disk = H.read_file(rel),
    }
  end
end)
