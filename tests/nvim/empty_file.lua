--- Scenario: an empty file, and a buffer's final newline changed by the user. Neovim shows an
--- empty file as one empty line and its didChange counts a line break after the last line
--- whatever 'eol' says: the server read "\n" for an empty file, and never saw :set noeol.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
-- Run from the main loop: Neovim triggers no OptionSet while it is starting (the -c command).
vim.schedule(function() H.run(function(data)
  H.setup()
  local ae = require('agent_edit')
  local function flush(b)
    local client = vim.lsp.get_clients({ name = 'agent_edit', bufnr = b })[1]
    require('vim.lsp._changetracking').flush(client)
  end
  local function read(rel)
    local r = ae.read({ path = rel })
    return { text = r.text, sha256 = r.sha256, source = r.source }
  end
  H.write_file('empty.txt', '')
  H.write_file('newline.txt', '\n')
  H.write_file('text.txt', 'a\nb\n')
  local empty = H.open('empty.txt')
  data.empty = read('empty.txt')
  local newline = H.open('newline.txt')
  data.newline = read('newline.txt')
  -- Typed into the empty buffer: Neovim writes the line with its newline ('eol').
  H.type(empty, 'ihello')
  flush(empty)
  data.typed = read('empty.txt')
  -- All of it deleted: the empty buffer again.
  H.type(empty, 'ggdG')
  flush(empty)
  data.cleared = read('empty.txt')
  -- The newline of "\n" deleted by the user (:set noeol): "".
  vim.bo[newline].eol = false
  data.newline_noeol = read('newline.txt')
  -- The user's 'eol' changes of a text file.
  local text = H.open('text.txt')
  vim.cmd('set noeol')
  data.noeol = read('text.txt')
  H.type(text, 'Goc')
  flush(text)
  data.noeol_typed = read('text.txt')
  vim.cmd('set eol')
  data.eol_again = read('text.txt')
  -- Set from Lua, as a plugin would.
  vim.bo[text].eol = false
  data.noeol_lua = read('text.txt')
end) end)
