--- agent_edit.apply_edit: the `workspace/applyEdit` handler of the agent-edit client.
---
--- Why it exists: Neovim's built-in handler checks only the FIRST TextDocumentEdit's version,
--- skips a stale one silently (it prints "Buffer ... newer than edits.") and still answers
--- `applied = true`. An agent must never get "applied" for text that did not land, and a user's
--- unsaved typing must never be overwritten by an edit computed from older text. So this handler
--- checks EVERY versioned TextDocumentEdit against the buffer's current LSP version before anything
--- is applied, refuses the whole edit with `applied = false` and a reason if one is stale, and
--- otherwise hands the edit to Neovim's own apply. It plans nothing itself: the only change it
--- makes to an edit is rewriting two end-of-document forms that Neovim's apply gets wrong into
--- equivalent ones (adapt_for_neovim), and to the buffer setting 'eol' when the edit removes or
--- adds the final newline (final_newline.lua). It also answers the server's
--- `agentEdit/saveDocuments`.

local M = {}

local util = vim.lsp.util
local final_newline = require('agent_edit.final_newline')

--- A path in one canonical spelling, so URIs from the server and buffer names compare equal.
--- @param path string
--- @return string
local function canonical(path)
  return vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
end

--- The loaded buffer that shows `uri`, or nil. Never creates a buffer (vim.uri_to_bufnr would).
--- @param uri string
--- @return integer?
function M.find_buffer(uri)
  local ok, fname = pcall(vim.uri_to_fname, uri)
  if not ok then
    return nil
  end
  local want = canonical(fname)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local name = vim.api.nvim_buf_get_name(bufnr)
      if name ~= '' and canonical(name) == want then
        return bufnr
      end
    end
  end
  return nil
end

--- @param v any
--- @return boolean
local function is_null(v)
  return v == nil or v == vim.NIL
end

--- Every versioned TextDocumentEdit whose version is not the buffer's current one.
--- A null version means "not open when the server computed the edit": unchecked, by the spec.
--- @param edit table lsp.WorkspaceEdit
--- @return table[] stale list of {uri, expected, current}
function M.stale_documents(edit)
  local stale = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    local doc = change.textDocument
    if change.kind == nil and doc and not is_null(doc.version) then
      local bufnr = M.find_buffer(doc.uri)
      if bufnr == nil then
        -- The server computed this edit against an open buffer that has since been closed: the
        -- text it saw is gone, so applying it to whatever is on disk would be a guess.
        table.insert(stale, { uri = doc.uri, expected = doc.version, current = vim.NIL })
      else
        local current = util.buf_versions[bufnr]
        if current ~= doc.version then
          table.insert(stale, { uri = doc.uri, expected = doc.version, current = current })
        end
      end
    end
  end
  return stale
end

--- @param stale table[]
--- @return string
local function failure_reason(stale)
  local parts = {}
  for _, s in ipairs(stale) do
    local path = vim.uri_to_fname(s.uri)
    if s.current == vim.NIL then
      table.insert(
        parts,
        string.format(
          '%s: edit is for version %s but the buffer is no longer open',
          path,
          s.expected
        )
      )
    else
      table.insert(
        parts,
        string.format(
          '%s: edit is for version %s but the buffer is at version %s',
          path,
          s.expected,
          s.current
        )
      )
    end
  end
  return 'STALE: the buffer changed since the edit was computed; nothing was applied. '
    .. table.concat(parts, '; ')
end

--- Buffers a WorkspaceEdit will write into (text edits), with whether each was modified before.
--- @param edit table
--- @return table<string, boolean> uri -> modified-before (false also for buffers not loaded)
local function touched_uris(edit)
  local uris = {}
  local function modified(uri)
    local bufnr = M.find_buffer(uri)
    return bufnr ~= nil and vim.bo[bufnr].modified or false
  end
  local function note(uri)
    uris[uri] = uris[uri] or modified(uri)
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind == nil and change.textDocument then
      note(change.textDocument.uri)
    elseif change.kind == 'create' then
      note(change.uri)
    elseif change.kind == 'rename' then
      -- The buffer moves with the file: its unsaved state is the old buffer's.
      uris[change.newUri] = modified(change.oldUri)
    end
  end
  for uri in pairs(edit.changes or {}) do
    note(uri)
  end
  return uris
end

--- Canonical path -> whether that buffer held unsaved text before the latest applied agent edit
--- touched it; read by the `agentEdit/saveDocuments` request the server sends after verifying.
M._dirty_before = {}

--- Canonical path -> the buffer's LSP version right after the latest applied agent edit. The
--- save request comes after the server verified the edit; a keystroke in between is the user's
--- own unsaved text, so a buffer whose version moved on since is not written.
M._version_after = {}

--- bufnr -> the file's identity on disk when Neovim last read or wrote it ({} if there was no
--- file). `write!` would replace whatever the disk holds, so a save is skipped when the file
--- changed since (another program, a checkout): its content would be lost without a word.
M._disk_seen = {}

--- @param path string
--- @return table identity {ino, size, sec, nsec}, or {} when there is no file
local function disk_identity(path)
  local st = vim.uv.fs_stat(path)
  if not st then
    return {}
  end
  return { ino = st.ino, size = st.size, sec = st.mtime.sec, nsec = st.mtime.nsec }
end

--- Remembers the disk identity of a buffer's file (Neovim just read or wrote it).
--- @param bufnr integer
function M.note_disk(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' then
    return
  end
  M._disk_seen[bufnr] = disk_identity(canonical(name))
end

--- Whether the buffer's file is no longer the one Neovim last read or wrote (or that is unknown).
--- @param bufnr integer
--- @return boolean
local function disk_changed(bufnr)
  local seen = M._disk_seen[bufnr]
  if seen == nil then
    return true
  end
  return not vim.deep_equal(seen, disk_identity(canonical(vim.api.nvim_buf_get_name(bufnr))))
end

--- @param uri string
--- @return string?
local function path_key(uri)
  local ok, fname = pcall(vim.uri_to_fname, uri)
  return ok and canonical(fname) or nil
end

--- The `agentEdit/saveDocuments` request (sent when the server's `saveAfterEdit` is on): writes
--- the touched buffers that held no unsaved user text before the edit, so the files on disk match
--- what the agent was told; a buffer with the user's own unsaved changes is skipped, never written
--- behind their back (the same rule as the VS Code client). Answers `{saved, skipped}` (URIs).
--- @param params table {uris: string[]}
--- @return table
function M.save_documents(_, params, _)
  local saved, skipped = {}, {}
  for _, uri in ipairs(type(params) == 'table' and params.uris or {}) do
    local key = path_key(uri)
    local bufnr = M.find_buffer(uri)
    local ok = false
    if
      M.options.save_after_edit == 'clean'
      and key
      and bufnr
      and M._dirty_before[key] == false
      and M._version_after[key] == util.buf_versions[bufnr]
      and vim.bo[bufnr].buftype == ''
      -- 'readonly' (:view, nvim -R) is the user's "do not write this"; write! would override it.
      and not vim.bo[bufnr].readonly
      and not disk_changed(bufnr)
    then
      if vim.bo[bufnr].modified then
        -- The server verified the text Neovim sent it, which ends with a line break only when
        -- 'eol' is set; 'fixeol' (on by default) would add one on write to a file that had none,
        -- so the disk would hold what no one verified. Off for this write, the user's value after.
        local fixeol = vim.bo[bufnr].fixeol
        vim.bo[bufnr].fixeol = false
        ok = pcall(vim.api.nvim_buf_call, bufnr, function()
          vim.cmd('silent keepalt keepjumps lockmarks write!')
        end)
        vim.bo[bufnr].fixeol = fixeol
        ok = ok and not vim.bo[bufnr].modified
      else
        ok = true -- already on disk as shown
      end
    end
    table.insert(ok and saved or skipped, uri)
  end
  return { saved = saved, skipped = skipped }
end

--- Sends the didChange for buffers the edit touched now, not after the debounce, so the server
--- (which verifies an edit from the didChange it receives) sees it before this handler's answer.
--- @param client_id integer
local function flush_changes(client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if client == nil then
    return
  end
  -- _changetracking is internal; if a future Neovim moves it, the debounced didChange still
  -- arrives, only later, so the failure is safe to ignore.
  pcall(function()
    require('vim.lsp._changetracking').flush(client)
  end)
end

--- Neovim's apply_text_edits mishandles two valid LSP edits at the end of a document, adding an
--- extra empty line (observed on 0.11.4, the server then rightly reports NOT_APPLIED):
---  * an insertion at (n, 0) where n is the buffer's line count (the position after the final
---    newline): it appends the lines of the new text including the empty one after its last "\n";
---  * an insertion at (0, 0) into a file created by the same edit: the new buffer is one empty line
---    with 'eol', so the inserted text keeps an extra empty last line.
--- Both are rewritten into equivalent edits that end past the last line, which Neovim's apply
--- treats as "replace through the end" and trims correctly. The text that results is the same as
--- the LSP edit defines; nothing else is touched.

local encoded_length = final_newline.encoded_length

--- Lines of a document as Neovim will load it: the loaded buffer, else the file on disk.
--- @param uri string
--- @return string[]? lines, boolean eol
local function document_lines(uri)
  local bufnr = M.find_buffer(uri)
  if bufnr then
    return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), vim.bo[bufnr].eol
  end
  local fname = vim.uri_to_fname(uri)
  if vim.fn.filereadable(fname) ~= 1 then
    return nil, false
  end
  local lines = vim.fn.readfile(fname, 'b')
  if #lines == 0 then
    return { '' }, true
  end
  if lines[#lines] == '' then
    table.remove(lines)
    return lines, true
  end
  return lines, false
end

--- @param text_edits table[]
--- @param lines string[]
--- @param encoding string
local function adapt_end_insertions(text_edits, lines, encoding)
  local n = #lines
  for _, te in ipairs(text_edits) do
    local s, e = te.range.start, te.range['end']
    if s.line == n and s.character == 0 and e.line == n and n > 0 then
      local last_line_is_touched = false
      for _, other in ipairs(text_edits) do
        if other ~= te and other.range['end'].line >= n - 1 then
          last_line_is_touched = true
        end
      end
      if not last_line_is_touched then
        te.range = {
          start = { line = n - 1, character = encoded_length(lines[n], encoding) },
          ['end'] = { line = n, character = 0 },
        }
        te.newText = '\n' .. te.newText
      end
    end
  end
end

--- Rewrites, in place, the end-of-document edits Neovim would misapply (see above).
--- @param edit table lsp.WorkspaceEdit
--- @param encoding string
function M.adapt_for_neovim(edit, encoding)
  local created = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind == 'create' then
      created[change.uri] = true
    elseif change.kind == 'rename' then
      created[change.newUri] = created[change.oldUri] and true or nil
    elseif change.kind == nil and change.textDocument then
      local uri = change.textDocument.uri
      if created[uri] then
        for _, te in ipairs(change.edits or {}) do
          local s, e = te.range.start, te.range['end']
          if s.line == 0 and s.character == 0 and e.line == 0 and e.character == 0 then
            te.range = { start = s, ['end'] = { line = 1, character = 0 } }
          end
        end
      else
        local lines, eol = document_lines(uri)
        if lines and eol then
          adapt_end_insertions(change.edits or {}, lines, encoding)
        end
      end
    end
  end
end

--- The loaded buffers of the file or folder `uri` names (itself or anything below it).
--- @param uri string
--- @return table<integer, string> bufnr -> its canonical file name
local function loaded_buffers_under(uri)
  local found = {}
  local ok, fname = pcall(vim.uri_to_fname, uri)
  local top = ok and canonical(fname):gsub('/$', '') or nil
  for _, bufnr in ipairs(top and vim.api.nvim_list_bufs() or {}) do
    local name = vim.api.nvim_buf_get_name(bufnr)
    if vim.api.nvim_buf_is_loaded(bufnr) and name ~= '' then
      name = canonical(name)
      if name == top or name:sub(1, #top + 1) == top .. '/' then
        found[bufnr] = name
      end
    end
  end
  return found
end

--- Why each RenameFile of `edit` may not run: Neovim's rename (vim.lsp.util.rename) moves the
--- file, then writes every loaded buffer under the old path to the new one with `:saveas!`. A
--- buffer holding the user's unsaved text would have it written to disk behind their back, and
--- one whose file another program changed since it was read would overwrite that change.
--- @param edit table lsp.WorkspaceEdit
--- @return string[] reasons, empty when every rename is safe
function M.unsafe_renames(edit)
  local reasons = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind == 'rename' then
      for bufnr, name in pairs(loaded_buffers_under(change.oldUri)) do
        if vim.bo[bufnr].modified then
          table.insert(reasons, name .. ' with its unsaved changes')
        elseif disk_changed(bufnr) then
          table.insert(reasons, name .. ' over what another program wrote to it since')
        end
      end
    end
  end
  return reasons
end

--- The open buffers with unsaved text that a DeleteFile of `edit` would take away: Neovim
--- deletes the file, then the buffer with `force` (vim.lsp.util.delete_file), so the user's
--- unsaved text would be gone from the editor (the history's undo brings it back only as a file).
--- @param edit table lsp.WorkspaceEdit
--- @return string[] names of those buffers, empty when every delete is safe
function M.unsaved_deletes(edit)
  local names = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind == 'delete' then
      for bufnr, name in pairs(loaded_buffers_under(change.uri)) do
        if vim.bo[bufnr].modified then
          table.insert(names, name)
        end
      end
    end
  end
  table.sort(names)
  return names
end

--- Whether a buffer holds a carriage return that LSP counts as a line break and Neovim does not
--- (a lone CR inside a line, or any CR in a 'fileformat=dos' line): Neovim places every position
--- it sends and applies by its own lines, so past that point the server's line numbers and
--- Neovim's disagree, and an edit would land on another line than the one the server checked.
--- A CR ending a 'unix' line (the file's CRLF) is one break for both: not counted.
--- @param bufnr integer
--- @return integer? line the first such line (1-based), or nil
function M.lone_cr_line(bufnr)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local unix = vim.bo[bufnr].fileformat == 'unix'
  local last = #lines
  for i, line in ipairs(lines) do
    local at = line:find('\r', 1, true)
    if at then
      if not unix then
        return i
      end
      -- The final CR of a line is a CRLF of the file, except on the last line without 'eol'.
      local ends = at == #line and (i < last or vim.bo[bufnr].eol)
      if not ends then
        return i
      end
    end
  end
  return nil
end

--- Whether Neovim would apply `text` with other line breaks than it has: its apply turns every
--- CRLF and lone CR of an edit's text into LF. In a 'fileformat=unix' buffer that drops the CR
--- of a CRLF line (a file with mixed endings); in a 'dos' one a lone CR becomes a line break.
--- @param text string
--- @param fileformat string
--- @return boolean
local function mangled_by_apply(text, fileformat)
  if fileformat == 'unix' then
    return text:find('\r', 1, true) ~= nil
  end
  return text:gsub('\r\n', ''):find('\r', 1, true) ~= nil
end

--- The documents an edit changes where Neovim and the server would not agree on the text: the
--- buffer holds a CR Neovim counts differently (lone_cr_line), or Neovim would change the line
--- breaks of the edit's text as it applies it. As reasons.
--- @param edit table lsp.WorkspaceEdit
--- @return string[]
function M.lone_cr_documents(edit)
  local reasons = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    local doc = change.textDocument
    if change.kind == nil and doc and change.edits and #change.edits > 0 then
      local bufnr = M.find_buffer(doc.uri)
      local line = bufnr and M.lone_cr_line(bufnr)
      local fname = vim.uri_to_fname(doc.uri)
      if line then
        table.insert(reasons, string.format('%s (line %d)', fname, line))
      else
        -- A buffer the edit loads (a file it creates) gets the first of 'fileformats'.
        local ff = bufnr and vim.bo[bufnr].fileformat
          or vim.split(vim.o.fileformats, ',', { plain = true })[1]
        for _, te in ipairs(change.edits) do
          if mangled_by_apply(te.newText or '', ff) then
            table.insert(reasons, string.format('%s (CRLF lines in a %s buffer)', fname, ff))
            break
          end
        end
      end
    end
  end
  return reasons
end

--- Options set by agent_edit.setup().
M.options = { save_after_edit = 'clean' }

--- The handler: `handlers["workspace/applyEdit"]` of the agent-edit client.
--- @param err any
--- @param params table lsp.ApplyWorkspaceEditParams
--- @param ctx table lsp.HandlerContext
--- @return table lsp.ApplyWorkspaceEditResult
function M.handler(err, params, ctx)
  if not params or type(params.edit) ~= 'table' then
    return { applied = false, failureReason = 'workspace/applyEdit without an edit' }
  end
  local stale = M.stale_documents(params.edit)
  if #stale > 0 then
    return { applied = false, failureReason = failure_reason(stale) }
  end
  local unsafe = M.unsafe_renames(params.edit)
  if #unsafe > 0 then
    return {
      applied = false,
      failureReason = 'Neovim renames an open buffer by writing it to the new name (:saveas!), '
        .. 'which would write '
        .. table.concat(unsafe, '; ')
        .. '; nothing was applied. Save or undo those changes (or reload the file: :edit) '
        .. 'first, then move the file.',
    }
  end
  local unsaved = M.unsaved_deletes(params.edit)
  if #unsaved > 0 then
    return {
      applied = false,
      failureReason = 'Neovim deletes an open buffer with its file, discarding the unsaved '
        .. 'changes of '
        .. table.concat(unsaved, '; ')
        .. '; nothing was applied. Save or undo those changes (or reload the file: :edit) '
        .. 'first, then delete the file.',
    }
  end
  local crs = M.lone_cr_documents(params.edit)
  if #crs > 0 then
    return {
      applied = false,
      failureReason = 'carriage returns Neovim does not handle as the language server does: a '
        .. 'CR inside a line (shown as ^M) counts as a line break for the server and not for '
        .. 'Neovim, and Neovim drops the CR of every CRLF in an edit it applies to a buffer '
        .. "with 'fileformat=unix', so the edit could land on another line or lose line "
        .. 'endings; nothing was applied: '
        .. table.concat(crs, '; ')
        .. ". Make the file's line endings uniform first (:edit ++ff=dos, then :write), or edit "
        .. 'it by hand.',
    }
  end
  -- A null version can arrive as vim.NIL (from Lua callers); Neovim's apply compares it as a
  -- number and fails, so make it the nil the JSON decoder gives.
  for _, change in ipairs(params.edit.documentChanges or {}) do
    if change.textDocument and change.textDocument.version == vim.NIL then
      change.textDocument.version = nil
    end
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or 'utf-16'
  -- Where each document's text will end (a final newline or not), judged on the edit as sent.
  local ends = final_newline.plan(params.edit, encoding, M.find_buffer)
  M.adapt_for_neovim(params.edit, encoding)
  local before = touched_uris(params.edit)
  -- The built-in handler prints the label into the message area on every edit; the history view
  -- is where agent edits are shown, so leave it out.
  local quiet = vim.tbl_extend('force', {}, params)
  quiet.label = nil
  local builtin = vim.lsp.handlers['workspace/applyEdit']
  final_newline.applying = true
  local done, result = pcall(builtin, err, quiet, ctx)
  local fixed, fix_err = true, nil
  if done and result and result.applied then
    -- Neovim applied the lines; the final newline lives in 'eol' (final_newline.lua).
    fixed, fix_err = pcall(final_newline.finish, ends, M.find_buffer)
  end
  final_newline.applying = false
  if not done then
    error(result, 0)
  elseif not fixed then
    error(fix_err, 0)
  end
  if not (result and result.applied) then
    -- Neovim's apply failed part-way (it answers applied: false for an error after it changed
    -- some files). This client promises that applied: false means nothing changed, so it is an
    -- error answer instead, sent after what did change, for the server to see it.
    flush_changes(ctx.client_id)
    local reason = result and result.failureReason or 'the workspace edit failed'
    return nil,
      vim.lsp.rpc_response_error(
        vim.lsp.protocol.ErrorCodes.InternalError,
        'Neovim failed while applying the edit, possibly after changing some files: '
          .. tostring(reason)
      )
  end
  if result and result.applied then
    for uri, was_modified in pairs(before) do
      local key = path_key(uri)
      if key then
        M._dirty_before[key] = was_modified
        local bufnr = M.find_buffer(uri)
        M._version_after[key] = bufnr and util.buf_versions[bufnr] or nil
      end
    end
    flush_changes(ctx.client_id)
    for _, e in ipairs(client and ends or {}) do
      local bufnr = M.find_buffer(e.uri)
      if bufnr then
        final_newline.declare(client, bufnr)
      end
    end
  end
  return result
end

return M
