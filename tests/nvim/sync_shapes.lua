--- Scenario: buffer shapes where Neovim's document sync alone leaves the server a text that is
--- not the buffer's (each found by tests/nvim/sync_random.lua): a change that leaves one empty
--- line, an undo back to Neovim's empty buffer, a change after a reload, an agent edit of a
--- 'noeol' buffer ending in an empty line, a 'fileformat' dos buffer that shows no line break yet,
--- and 'fileformat' changes. Records, per case, the server's read and the buffer's own text (what
--- Neovim writes for it with 'fixeol' off).
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
vim.schedule(function() H.run(function(data)
  H.setup()
  local ae = require('agent_edit')
  local function settle()
    local done = false
    vim.schedule(function()
      done = true
    end)
    H.wait(function()
      return done
    end, 'the scheduled callbacks')
  end
  local function flush(b)
    settle()
    local client = vim.lsp.get_clients({ name = 'agent_edit', bufnr = b })[1]
    require('vim.lsp._changetracking').flush(client, b)
  end
  local tmp = vim.fn.tempname()
  local function buffer_text(b)
    vim.api.nvim_buf_call(b, function()
      local fixeol = vim.bo.fixeol
      vim.bo.fixeol = false
      vim.cmd('silent noautocmd keepalt write! ' .. vim.fn.fnameescape(tmp))
      vim.bo.fixeol = fixeol
    end)
    local f = assert(io.open(tmp, 'rb'))
    local text = f:read('*a')
    f:close()
    return text
  end
  local function case(name, file, act)
    H.write_file(name .. '.txt', file)
    local b = H.open(name .. '.txt')
    local result = act(b, name .. '.txt')
    flush(b)
    data[name] = {
      read = ae.read({ path = name .. '.txt' }).text,
      buffer = buffer_text(b),
      lines = H.lines(b),
      eol = vim.bo[b].eol,
      result = result,
    }
  end
  local function write(rel, text)
    local r = ae.read({ path = rel })
    return ae.write({ path = rel, text = text, expect = { sha256 = r.sha256 } })
  end

  -- Neovim's sync sends these as if the break before (after) the empty line stayed.
  case('last_line_deleted', '\n \n', function(b)
    H.type(b, 'Gdd')
  end)
  case('first_line_deleted', 'a\n\n', function(b)
    H.type(b, 'ggdd')
  end)
  -- Back to Neovim's empty buffer by an undo: 'eol' and one empty line, yet no newline.
  case('undo_to_empty', '', function(b)
    H.type(b, 'ihello')
    flush(b)
    H.type(b, 'u')
  end)
  -- After a reload the plugin still follows the buffer becoming empty.
  case('clear_after_reload', 'a\n', function(b)
    vim.api.nvim_buf_call(b, function()
      vim.cmd('silent edit!')
    end)
    H.type(b, 'ggdG')
  end)
  -- A 'noeol' buffer whose last line is empty keeps its end through an agent edit elsewhere.
  case('noeol_empty_last_line', 'P\nS', function(b, rel)
    vim.api.nvim_buf_set_lines(b, 2, 2, false, { '' })
    flush(b)
    return ae.replace({ path = rel, oldText = 'P', newText = 'P\n' })
  end)
  -- 'fileformat' dos, one line and no newline: no break to show the server the file's CRLF.
  case('dos_one_line_eol', 'a\r\nb', function(b)
    H.type(b, 'Gdd')
    flush(b)
    vim.bo[b].eol = true
  end)
  case('dos_one_line_write_crlf', 'a\r\nb', function(b, rel)
    H.type(b, 'Gdd')
    flush(b)
    return write(rel, 'x\r\nS')
  end)
  case('dos_one_line_write_lf', 'a\r\nb', function(b, rel)
    H.type(b, 'Gdd')
    flush(b)
    return write(rel, 'x\nS\n')
  end)
  -- The user's 'fileformat' changes: every line break of the text with them.
  case('to_dos', 'a\nb\n', function(b)
    vim.bo[b].fileformat = 'dos'
  end)
  case('to_dos_typed', 'a\nb\n', function(b)
    vim.bo[b].fileformat = 'dos'
    H.type(b, 'Goc')
  end)
  case('to_unix', 'a\r\nb\r\n', function(b)
    vim.bo[b].fileformat = 'unix'
    H.type(b, 'ggOz')
  end)
  os.remove(tmp)
end) end)
