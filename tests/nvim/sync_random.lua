--- Scenario: random sequences of a user's typing and commands interleaved with an agent's reads
--- and edits, on files of every final-newline and line-ending shape. After each step the
--- server's read must be the buffer's text exactly: the bytes Neovim writes for the buffer with
--- 'fixeol' off (the buffer as it is, which is what the server holds until a write adds a
--- newline). Seeds from $AGENT_EDIT_SEEDS ("first:count"), $AGENT_EDIT_STEPS steps each, each
--- seed a file of its own; $AGENT_EDIT_SKIP leaves out user steps by name, $AGENT_EDIT_DEBUG logs
--- the LSP traffic (in the test's context). Records each seed's first mismatch with the steps
--- that led to it, each step with the buffer's text after it.
---
--- Not covered: 'fileformat' mac (Neovim splits its lines at CR, the server counts Neovim's lines
--- by LF), a 'bomb' change, and an agent undo after a 'fileformat' change (see that step).
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
vim.schedule(function() H.run(function(data)
  H.setup()
  local ae = require('agent_edit')
  if vim.env.AGENT_EDIT_DEBUG then
    vim.lsp.log.set_level('DEBUG') -- what went over the wire, in the context of a failure
  end
  local first, count = (vim.env.AGENT_EDIT_SEEDS or '1:10'):match('^(%d+):(%d+)$')
  first, count = tonumber(first), tonumber(count)
  local steps = tonumber(vim.env.AGENT_EDIT_STEPS or '24')

  local rnd
  local function pick(t)
    return t[rnd(#t)]
  end

  --- Lets everything the last step scheduled run (Neovim's own callbacks, the plugin's undo
  --- follower) before the next: a marker scheduled last runs after them.
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
    for _, c in ipairs(vim.lsp.get_clients({ name = 'agent_edit', bufnr = b })) do
      require('vim.lsp._changetracking').flush(c, b)
    end
  end

  --- The buffer's text: what Neovim writes for it with 'fixeol' off.
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

  local starts = { '', '\n', 'a', 'a\n', 'a\n\n', 'a\nb', '\n\n', 'a\r\nb\r\n', 'a\r\nb', '\r\n' }
  -- A CR inside a line is a character to Neovim ('fileformat' unix), a line break to LSP.
  local pieces = { '', 'x', 'é', 'yz', ' ', 'c\rd' }
  local agent_pieces = { '', 'P', 'qq', '\n', 'R\n', '\nS' }

  --- A random char boundary of line `row` (0-based), as a byte column.
  local function col_of(b, row)
    local line = vim.api.nvim_buf_get_lines(b, row, row + 1, false)[1] or ''
    local n = vim.fn.strchars(line)
    return vim.fn.byteidx(line, rnd(n + 1) - 1)
  end

  local function pos(b)
    local row = rnd(vim.api.nvim_buf_line_count(b)) - 1
    return row, col_of(b, row)
  end

  local seed, rel, renames -- the current seed's, read by the steps
  local user = {
    set_text = function(b)
      local r1, c1 = pos(b)
      local r2, c2 = pos(b)
      if r2 < r1 or (r2 == r1 and c2 < c1) then
        r1, c1, r2, c2 = r2, c2, r1, c1
      end
      local repl = {}
      for _ = 1, rnd(3) do
        table.insert(repl, pick(pieces))
      end
      vim.api.nvim_buf_set_text(b, r1, c1, r2, c2, repl)
      return ('set_text %d:%d-%d:%d %s'):format(r1, c1, r2, c2, vim.inspect(repl))
    end,
    set_lines = function(b)
      local n = vim.api.nvim_buf_line_count(b)
      local i = rnd(n + 1) - 1
      local j = math.min(n, i + rnd(3) - 1)
      local repl = {}
      for _ = 1, rnd(3) - 1 do
        table.insert(repl, pick(pieces))
      end
      vim.api.nvim_buf_set_lines(b, i, j, false, repl)
      return ('set_lines %d-%d %s'):format(i, j, vim.inspect(repl))
    end,
    undo = function(b)
      H.type(b, 'u')
      return 'u'
    end,
    redo = function(b)
      H.type(b, vim.keycode('<C-r>'))
      return '<C-r>'
    end,
    new_last_line = function(b)
      H.type(b, 'Go' .. vim.keycode('<Esc>'))
      return 'Go<Esc>'
    end,
    delete_last_line = function(b)
      H.type(b, 'Gdd')
      return 'Gdd'
    end,
    typed_break = function(b)
      local row = rnd(vim.api.nvim_buf_line_count(b))
      H.type(b, row .. 'GAq' .. vim.keycode('<CR>') .. 'w' .. vim.keycode('<Esc>'))
      return row .. 'GAq<CR>w<Esc>'
    end,
    join = function(b)
      H.type(b, 'ggJ')
      return 'ggJ'
    end,
    paste_line = function(b)
      H.type(b, 'ggyyGp')
      return 'ggyyGp'
    end,
    clear = function(b)
      H.type(b, 'ggdG')
      return 'ggdG'
    end,
    write = function(b)
      vim.api.nvim_buf_call(b, function()
        vim.cmd('silent write!')
      end)
      return 'write (fixeol ' .. tostring(vim.bo[b].fixeol) .. ')'
    end,
    saveas = function(b)
      -- A rename (as an agent-edit move or a file manager plugin does it): Neovim sends the
      -- buffer's didOpen again under the new name.
      renames = renames + 1
      rel = ('r%d_%d.txt'):format(seed, renames)
      vim.api.nvim_buf_call(b, function()
        vim.cmd('silent saveas! ' .. vim.fn.fnameescape(rel))
      end)
      return 'saveas ' .. rel .. ' (fixeol ' .. tostring(vim.bo[b].fixeol) .. ')'
    end,
    reload = function(b)
      vim.api.nvim_buf_call(b, function()
        vim.cmd('silent edit!')
      end)
      return 'edit!'
    end,
    eol = function(b)
      vim.bo[b].eol = not vim.bo[b].eol
      return 'eol=' .. tostring(vim.bo[b].eol)
    end,
    fixeol = function(b)
      vim.bo[b].fixeol = not vim.bo[b].fixeol
      return 'fixeol=' .. tostring(vim.bo[b].fixeol)
    end,
    fileformat = function(b)
      local ff = pick({ 'unix', 'dos' })
      vim.bo[b].fileformat = ff
      return 'fileformat=' .. ff
    end,
  }
  for name in (vim.env.AGENT_EDIT_SKIP or ''):gmatch('[%w_]+') do
    user[name] = nil -- to look at one kind of failure at a time
  end
  local user_names = vim.tbl_keys(user)
  table.sort(user_names)

  local failures = {}
  local totals = { steps = 0, agent_ok = 0, agent_refused = 0 }
  for s = first, first + count - 1 do
    seed, renames = s, 0
    math.randomseed(seed)
    rnd = math.random
    rel = ('r%d.txt'):format(seed)
    local start = starts[(seed - 1) % #starts + 1]
    H.write_file(rel, start)
    local b = H.open(rel)
    local trace = { 'open ' .. vim.inspect(start) }
    local last_edit, last_ff
    local function fail(what, extra)
      local failure = { seed = seed, what = what, trace = trace }
      table.insert(failures, vim.tbl_extend('force', failure, extra))
    end
    for _ = 1, steps do
      totals.steps = totals.steps + 1
      local step
      if rnd() < 0.25 then
        -- The agent: a whole-file write or a replace, from what it read.
        local read = ae.read({ path = rel })
        local before = buffer_text(b)
        local crlf = read.text:find('\r\n', 1, true) ~= nil or vim.bo[b].fileformat == 'dos'
        local function agent_text()
          local t = ''
          for _ = 1, rnd(4) - 1 do
            t = t .. pick(agent_pieces)
          end
          -- An agent writes "\n" (the server keeps the file's breaks), or the file's own.
          return (crlf and rnd() < 0.5) and t:gsub('\r?\n', '\r\n') or t
        end
        local result, want
        -- Not after a 'fileformat' change: the undo restores the old text's own line breaks,
        -- which Neovim turns into the new format (an honest PARTIAL; left as it is).
        if last_edit and last_ff == vim.bo[b].fileformat and rnd() < 0.2 then
          step = 'agent undo ' .. last_edit
          result = ae.undo({ editId = last_edit })
          last_edit = nil
        elseif rnd() < 0.5 or read.text == '' then
          want = agent_text()
          step = 'agent write ' .. vim.inspect(want)
          result = ae.write({ path = rel, text = want, expect = { sha256 = read.sha256 } })
        else
          local text = read.text
          local chars = vim.str_utf_pos(text) -- where each character starts
          local k = rnd(#chars)
          local m = math.min(#chars, k + rnd(3) - 1)
          local i, j = chars[k], (chars[m + 1] or #text + 1) - 1
          local old, new = text:sub(i, j), agent_text()
          step = ('agent replace %s -> %s'):format(vim.inspect(old), vim.inspect(new))
          local expect = { sha256 = read.sha256 }
          result = ae.replace({ path = rel, oldText = old, newText = new, expect = expect })
          local at = text:find(old, 1, true)
          want = at and text:sub(1, at - 1) .. new .. text:sub(at + #old) or text
        end
        table.insert(trace, step)
        settle()
        flush(b)
        local now = buffer_text(b)
        if result.ok then
          totals.agent_ok = totals.agent_ok + 1
          last_edit, last_ff = result.editId, vim.bo[b].fileformat
          -- The text the server says it left (an agent's "\n" matches a CRLF file's "\r\n").
          local file = result.files[1]
          -- (An undo of an edit of the file the buffer was renamed from acts on that file.)
          local mine = file.path == rel
          if (mine and file.sha256 ~= vim.fn.sha256(now)) or (not mine and now ~= before) then
            fail('the agent edit left another text', { want = want, buffer = now, result = result })
            break
          end
        else
          totals.agent_refused = totals.agent_refused + 1
          local reason = result.details and result.details.reason
          -- An undo refused CONFLICT: the user changed those lines since.
          local undo = step:match('^agent undo') ~= nil
          local expected = { AMBIGUOUS = true, NO_MATCH = true, CONFLICT = undo }
          -- The plugin refuses, before applying anything, an edit near a CR Neovim shows as ^M.
          local cr = result.code == 'CLIENT_REJECTED'
            and result.message:find('carriage returns', 1, true)
          if not (expected[result.code] or reason == 'NO_CHANGE' or cr) or now ~= before then
            fail('the agent edit was refused', { buffer = now, before = before, result = result })
            break
          end
        end
      else
        local name = pick(user_names)
        local ok, what = pcall(user[name], b)
        table.insert(trace, ok and what or (name .. ' failed: ' .. tostring(what)))
        settle()
      end
      flush(b)
      local read = ae.read({ path = rel })
      local text = buffer_text(b)
      trace[#trace] = trace[#trace] .. ' => ' .. vim.inspect(text)
      if not read.ok or read.text ~= text then
        fail('the read is not the buffer', {
          read = read.text,
          buffer = text,
          code = read.code,
          lines = H.lines(b),
          eol = vim.bo[b].eol,
          fileformat = vim.bo[b].fileformat,
        })
        break
      end
    end
    vim.cmd('silent! bwipeout! ' .. b)
  end
  os.remove(tmp)
  data.failures = failures
  data.totals = totals
end) end)
