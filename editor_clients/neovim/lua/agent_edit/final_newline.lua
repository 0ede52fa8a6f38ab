--- agent_edit.final_newline: a buffer's final newline, kept by Neovim in 'eol', not in its lines.
---
--- Why it exists: Neovim's didChange counts a line break after the last line whatever 'eol' says
--- (only its didOpen leaves it out of a 'noeol' buffer), and an empty buffer is one empty line,
--- sent as "\n". So the server cannot tell from them whether the file ends with a newline, nor an
--- empty file from one holding "\n". This module tells it (`agentEdit/documentFormat`
--- `{uri, finalNewline, eol, lineCount?}`, editor_clients/PROTOCOL.md) right after every didOpen
--- (attach, reload, rename, a restarted client: M.follow_opens), when 'eol' or the buffer's
--- emptiness changes, after the user's write that added a final newline ('fixeol': M.written),
--- and after an agent edit; and it makes an agent edit that removes or
--- adds the final newline leave the lines and 'eol' that hold exactly the text the server asked
--- for (Neovim's apply only changes lines). It plans nothing: it reads where the edit's text ends.

local M = {}

--- Whether the buffer's text ends with a line break: 'eol' is set and the buffer is not Neovim's
--- empty buffer (one empty line that writes as an empty file; wordcount() counts 0 bytes in it,
--- 1 in the single empty line of a file holding "\n").
--- @param bufnr integer
--- @return boolean
function M.has(bufnr)
  if not vim.bo[bufnr].eol then
    return false
  end
  if
    vim.api.nvim_buf_line_count(bufnr) > 1
    or vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] ~= ''
  then
    return true
  end
  return vim.api.nvim_buf_call(bufnr, function()
    return vim.fn.wordcount().bytes
  end) > 0
end

--- client id -> bufnr -> the finalNewline and eol last sent.
M._sent = {}

--- 'fileformat' -> the documentFormat `eol` it saves with.
M.line_endings = { unix = 'lf', dos = 'crlf', mac = 'cr' }

--- Tells one client whether the buffer's text ends with a line break (when that changed since it
--- was last told, or always with `force`). `opened`: right after the buffer's didOpen, before
--- any change: the buffer's line count goes with it (`lineCount`), as the didOpen's text does not
--- tell the server which break its changes count (a 'noeol' buffer whose last line is empty, sent
--- as "a\n", is the text of an 'eol' buffer holding "a"; Neovim's empty buffer, sent as "\n",
--- that of a 'noeol' buffer of two empty lines).
--- @param client vim.lsp.Client
--- @param bufnr integer
--- @param force boolean?
--- @param opened boolean?
function M.declare(client, bufnr, force, opened)
  if not vim.api.nvim_buf_is_loaded(bufnr) or client:is_stopped() then
    return
  end
  local has = M.has(bufnr)
  -- The line ending too: the break the server adds for 'eol' to a text that shows none (an
  -- empty buffer, one line) is the buffer's, and the server forgets it at every notification.
  local eol = M.line_endings[vim.bo[bufnr].fileformat]
  local sent = M._sent[client.id] or {}
  M._sent[client.id] = sent
  local state = tostring(has) .. ' ' .. tostring(eol)
  if sent[bufnr] == state and not force then
    return
  end
  sent[bufnr] = state
  local params = { uri = vim.uri_from_bufnr(bufnr), finalNewline = has, eol = eol }
  if opened then
    params.lineCount = vim.api.nvim_buf_line_count(bufnr)
  end
  client:notify('agentEdit/documentFormat', params)
end

--- Clients whose notify M.follow_opens wrapped (weak keys).
M._following = setmetatable({}, { __mode = 'k' })

--- Makes the client tell its server about the final newline right after each didOpen it sends
--- (its on_init): the first one (attach), and the ones Neovim sends again for an open buffer
--- when it is reloaded (:edit!), renamed (:saveas, a rename by an agent edit or a file manager
--- plugin, sent from Neovim's BufWritePost handler) or attached again. Neovim has no hook there:
--- LspNotify comes a loop later, after requests sent meanwhile were answered from the wrong text.
--- @param client vim.lsp.Client
function M.follow_opens(client)
  if M._following[client] then
    return
  end
  M._following[client] = true
  local notify = client.notify
  client.notify = function(self, method, params)
    local sent = notify(self, method, params)
    if sent and method == 'textDocument/didOpen' then
      local uri = params.textDocument.uri
      for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(bufnr) and vim.uri_from_bufnr(bufnr) == uri then
          M.declare(self, bufnr, true, true)
        end
      end
    end
    return sent
  end
end

--- After a write of the whole buffer to `file`: when 'fixeol' made Neovim add the final newline
--- 'eol' did not hold, the file now has it, the buffer still not; 'eol' is set (as reading the
--- file again would), so the server's text is the file's (its sha256 the one on disk) and the
--- next agent edit is planned on it. Neovim writes its empty buffer as an empty file.
--- @param bufnr integer
--- @param file string the written file (<afile>)
function M.written(bufnr, file)
  local bo = vim.bo[bufnr]
  if bo.eol or not bo.fixeol or bo.binary or M.applying then
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or vim.fn.fnamemodify(file, ':p') ~= vim.fn.fnamemodify(name, ':p') then
    return -- written to another file (:w other): the buffer's own file is as it was
  end
  local stat = vim.uv.fs_stat(name)
  if not stat or stat.size == 0 then
    return
  end
  local modified = bo.modified
  bo.eol = true
  bo.modified = modified
  M.declare_all(bufnr)
end

--- Tells every agent-edit client of the buffer.
--- @param bufnr integer
--- @param force boolean?
function M.declare_all(bufnr, force)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local name = require('agent_edit').name
  for _, client in ipairs(vim.lsp.get_clients({ name = name, bufnr = bufnr })) do
    M.declare(client, bufnr, force)
  end
end

--- True while an agent edit is applied: its buffers are told about once it is done (a state
--- part-way, before 'eol' is set, would be a text no one asked for).
M.applying = false

--- bufnr -> true while this module watches the buffer's lines.
M._watched = {}

--- Starts telling `client` about the buffer (its on_attach: after the didOpen, which
--- M.follow_opens already followed with the final newline).
--- @param client vim.lsp.Client
--- @param bufnr integer
function M.track(client, bufnr)
  M.declare(client, bufnr)
  if M._watched[bufnr] then
    return
  end
  M._watched[bufnr] = true
  -- Emptiness changes only through a one-line state: look after changes that end in one, or
  -- that leave it. At once, so the server hears it before any request that follows.
  local single = vim.api.nvim_buf_line_count(bufnr) == 1
  vim.api.nvim_buf_attach(bufnr, false, {
    on_lines = function(_, b)
      local now = vim.api.nvim_buf_line_count(b) == 1
      if (now or single) and not M.applying then
        M.declare_all(b)
        if now then
          -- An undo back to one empty line makes it Neovim's empty buffer once it is done.
          vim.schedule(function()
            if not M.applying then
              M.declare_all(b)
            end
          end)
        end
      end
      single = now
      if M._undo[b] and not M.applying then
        -- Maybe an undo or redo of an agent edit that changed 'eol': the undo state is known
        -- once the change is done.
        vim.schedule(function()
          M.follow_undo(b)
        end)
      end
    end,
    on_reload = function(_, b)
      -- Reloaded (:edit!, or an undo across one): Neovim sends the text again as a new didOpen,
      -- 'eol' as read, which the client follows (M.follow_opens). Kept even so: without an
      -- on_reload Neovim detaches these callbacks at the first reload.
      single = vim.api.nvim_buf_line_count(b) == 1
    end,
    on_detach = function(_, b)
      M._watched[b] = nil
      M._undo[b] = nil
    end,
  })
end

--- @param a table lsp.Position
--- @param b table lsp.Position
--- @return boolean
local function before(a, b)
  return a.line < b.line or (a.line == b.line and a.character < b.character)
end

--- @param a table lsp.Position
--- @param b table lsp.Position
--- @return boolean
local function same(a, b)
  return a.line == b.line and a.character == b.character
end

--- @param text string
--- @return boolean
local function ends_with_break(text)
  local last = text:sub(-1)
  return last == '\n' or last == '\r'
end

--- Whether the text `edits` leave ends with a line break, the text ending at `tend` (its end
--- position: (n, 0) after a final newline) and positions past it counting as it. Walks back from
--- the end: the last insertion there with text decides, else an edit covering the last character
--- (its text if any, else the walk goes on before it), else the text's own character there.
--- @param edits table[] lsp.TextEdit[]
--- @param tend table lsp.Position
--- @return boolean
--- @return table? edit the TextEdit whose text ends the new text, if one does
function M.leaves_break(edits, tend)
  local function clamp(p)
    return before(tend, p) and tend or p
  end
  local pos = tend
  for _ = 1, #edits + 1 do
    local insertion, cover
    for _, te in ipairs(edits) do
      local s, e = clamp(te.range.start), clamp(te.range['end'])
      if same(s, pos) and same(e, pos) then
        if (te.newText or '') ~= '' then
          insertion = te -- of several at one position, the last in the array comes last
        end
      elseif before(s, pos) and not before(e, pos) then
        cover = te
      end
    end
    if insertion then
      return ends_with_break(insertion.newText), insertion
    end
    if cover == nil then
      -- No edit reaches the character before `pos`: the text's own (a line break at a line start).
      return pos.character == 0 and pos.line > 0, nil
    end
    if (cover.newText or '') ~= '' then
      return ends_with_break(cover.newText), cover
    end
    pos = clamp(cover.range.start)
  end
  return false, nil
end

--- The length of `line` in the position encoding's units (apply_edit.lua uses it too).
--- @param line string
--- @param encoding string
--- @return integer
function M.encoded_length(line, encoding)
  if encoding == 'utf-8' then
    return #line
  end
  return vim.str_utfindex(line, encoding)
end
local encoded_length = M.encoded_length

--- Before Neovim applies `edit`: per document the edit writes into, whether its text ends with a
--- line break now (nil for a file the edit creates: empty) and whether it will. Neovim's apply
--- works on lines that each end with a line break, so its lines are the new text without its
--- final newline; where the text has none now (the lines are the text itself), an edit that adds
--- one is changed, in place, to leave it out: M.finish sets 'eol' for it.
--- @param edit table lsp.WorkspaceEdit
--- @param encoding string
--- @param find_buffer fun(uri: string): integer?
--- @return table[] {uri, had: boolean?, want: boolean}
function M.plan(edit, encoding, find_buffer)
  local ends, created = {}, {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind == 'create' then
      created[change.uri] = true
    elseif change.kind == nil and change.textDocument and change.edits and #change.edits > 0 then
      local uri = change.textDocument.uri
      local bufnr = not created[uri] and find_buffer(uri)
      if created[uri] then
        local want = M.leaves_break(change.edits, { line = 0, character = 0 })
        table.insert(ends, { uri = uri, want = want })
      elseif bufnr then
        local had = M.has(bufnr)
        local seq = vim.fn.undotree(bufnr).seq_cur
        local n = vim.api.nvim_buf_line_count(bufnr)
        local tend = { line = n, character = 0 }
        if not had then
          local last = vim.api.nvim_buf_get_lines(bufnr, n - 1, n, false)[1]
          tend = { line = n - 1, character = encoded_length(last, encoding) }
        end
        local want, last = M.leaves_break(change.edits, tend)
        if not had and not last then
          -- The text's own end stays the end (a 'noeol' buffer whose last line is empty ends
          -- with that line's break): Neovim's lines hold it as they are, 'eol' stays off.
          want = false
        end
        if not had and want and last then
          -- Neovim's lines are the text without its final newline, which 'eol' will hold: the
          -- edit leaves that newline out (removing an empty last line after the apply instead
          -- made Neovim report a one-empty-line result wrongly to the server).
          local cut = last.newText:sub(-2) == '\r\n' and 2 or 1
          last.newText = last.newText:sub(1, -1 - cut)
        end
        table.insert(ends, { uri = uri, had = had, want = want, seq = seq })
      end
    end
  end
  return ends
end

--- bufnr -> the undo states around the latest agent edit that changed the buffer's 'eol':
--- {before, after (undotree seq_cur), eol_before, eol_after}. Neovim's undo restores lines, not
--- 'eol': M.follow_undo sets it back when the user undoes (or redoes) that edit with `u`.
M._undo = {}

--- After a change of the buffer: if it is the undo (redo) of the agent edit that changed 'eol',
--- 'eol' goes back (forward) with it, and the server is told.
--- @param bufnr integer
function M.follow_undo(bufnr)
  local u = M._undo[bufnr]
  if u == nil or not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  local seq = vim.fn.undotree(bufnr).seq_cur
  local eol
  if seq == u.before then
    eol = u.eol_before
  elseif seq == u.after then
    eol = u.eol_after
  end
  if eol ~= nil and vim.bo[bufnr].eol ~= eol then
    vim.bo[bufnr].eol = eol
    M.declare_all(bufnr)
  end
end

--- After Neovim applied the edit: sets 'eol' so that the buffer's lines and 'eol' hold the text
--- the edit defines (the lines being that text without its final newline, M.plan). The buffer
--- counts as modified when 'eol' changed (Neovim does not count it while 'fixeol' is on), so a
--- save writes it.
--- @param ends table[] from M.plan
--- @param find_buffer fun(uri: string): integer?
function M.finish(ends, find_buffer)
  for _, e in ipairs(ends) do
    local bufnr = find_buffer(e.uri)
    if bufnr then
      local eol = vim.bo[bufnr].eol
      if eol ~= e.want then
        vim.bo[bufnr].eol = e.want
        vim.bo[bufnr].modified = true
        local after = vim.fn.undotree(bufnr).seq_cur
        -- Only an edit Neovim's undo holds as a step of its own can be followed.
        M._undo[bufnr] = e.seq and after ~= e.seq
            and { before = e.seq, after = after, eol_before = eol, eol_after = e.want }
          or nil
      end
      if e.want and not M.has(bufnr) then
        -- Still Neovim's empty buffer, which writes no newline: make its line a real one.
        vim.api.nvim_buf_set_lines(bufnr, 0, 1, false, { '' })
      end
    end
  end
end

return M
