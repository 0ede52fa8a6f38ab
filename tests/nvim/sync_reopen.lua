--- Scenario: the text the server holds after Neovim sends a buffer's didOpen again (a restarted
--- or re-attached client, a rename by :saveas) and after the user's own :w with 'fixeol'.
--- Neovim's didOpen sends the lines plus a final newline when 'eol' is set, while its didChange
--- counts one after the last line whatever 'eol' says: a 'noeol' buffer whose last line is empty
--- and Neovim's empty buffer are sent as if they ended with a newline they do not have.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
vim.schedule(function() H.run(function(data)
  H.setup()
  local ae = require('agent_edit')
  local function client_of(b)
    return vim.lsp.get_clients({ name = 'agent_edit', bufnr = b })[1]
  end
  local function flush(b)
    require('vim.lsp._changetracking').flush(client_of(b))
  end
  local function read(rel)
    local r = ae.read({ path = rel })
    return { text = r.text, sha256 = r.sha256, ok = r.ok, code = r.code }
  end
  local function buffer_text(b)
    local lines = H.lines(b)
    local text = table.concat(lines, '\n')
    if vim.bo[b].eol and not (#lines == 1 and lines[1] == '' and vim.fn.wordcount().bytes == 0) then
      text = text .. '\n'
    end
    return text
  end

  -- 1. A 'noeol' buffer whose last line is empty, then its client restarted.
  H.write_file('noeol.txt', 'a')
  local b = H.open('noeol.txt')
  vim.api.nvim_buf_set_lines(b, 1, 1, false, { '' })
  flush(b)
  data.noeol_before = read('noeol.txt')
  local old = client_of(b)
  old:stop()
  H.wait(function()
    return old:is_stopped()
  end, 'the client to stop')
  ae.attach(b)
  H.wait_attached(b)
  data.noeol_restarted = read('noeol.txt')
  -- An agent edit after it, with the sha256 the read gave.
  data.noeol_write = ae.write({
    path = 'noeol.txt',
    text = 'x\ny',
    expect = { sha256 = data.noeol_restarted.sha256 },
  })
  data.noeol_lines = H.lines(b)
  data.noeol_eol = vim.bo[b].eol
  data.noeol_buffer = buffer_text(b)
  data.noeol_after = read('noeol.txt')

  -- The same state re-sent by re-attaching to the running client (buf_attach_client again).
  H.write_file('reattach.txt', 'a')
  local r = H.open('reattach.txt')
  vim.api.nvim_buf_set_lines(r, 1, 1, false, { '' })
  flush(r)
  local client = client_of(r)
  vim.lsp.buf_detach_client(r, client.id)
  vim.lsp.buf_attach_client(r, client.id)
  H.wait_attached(r)
  data.reattached = read('reattach.txt')
  data.reattach_buffer = buffer_text(r)

  -- 2. An empty buffer renamed by the user's :saveas.
  H.write_file('empty.txt', '')
  local e = H.open('empty.txt')
  data.empty_before = read('empty.txt')
  vim.cmd('saveas moved.txt')
  data.empty_moved = read('moved.txt')
  data.empty_moved_disk = H.read_file('moved.txt')

  -- 3. The user's :w of a 'noeol' buffer with 'fixeol' on: the file gets its final newline.
  H.write_file('fix.txt', 'a')
  local f = H.open('fix.txt')
  data.fix_before = read('fix.txt')
  vim.cmd('write')
  data.fix_disk = H.read_file('fix.txt')
  data.fix_after = read('fix.txt')
  data.fix_modified = vim.bo[f].modified
  data.fix_replace = ae.replace({
    path = 'fix.txt',
    oldText = 'a\n',
    newText = 'b\n',
    expect = { sha256 = vim.fn.sha256(data.fix_disk) },
  })
  data.fix_lines = H.lines(f)
  data.fix_buffer = buffer_text(f)
  data.fix_final = read('fix.txt')
end) end)
