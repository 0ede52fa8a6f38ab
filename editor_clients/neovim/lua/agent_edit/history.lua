--- agent_edit.history: the `:AgentEditHistory` view.
---
--- Owns the scratch buffer (`filetype=diff`) listing the session's agent edits and the session's
--- net diff, the per-edit diff buffer opened with `<CR>`, and refreshing both when the server sends
--- `agentEdit/historyChanged`. The history itself lives in the server (`agentEdit.history`); this
--- module only renders the table it returns.

local M = {}

local HISTORY_NAME = 'agent-edit://history'

--- bufnr -> { entry_at = {line -> entry}, result } for every open history buffer.
M._views = {}

--- name -> bufnr of the scratch buffers this module made.
M._scratch = {}

--- @param v any
--- @return any v, or nil for JSON null
local function val(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

--- The list of entries of a history result (`entries`, or `edits`).
--- @param result table
--- @return table[]
function M.entries(result)
  local list = val(result.entries) or val(result.edits) or val(result.history) or {}
  return type(list) == 'table' and list or {}
end

--- @param entry table
--- @return any
function M.entry_id(entry)
  return val(entry.id) or val(entry.editId)
end

--- The outcome word of an entry: "applied", "dry-run", or the failure code.
--- @param entry table
--- @return string
function M.entry_outcome(entry)
  local outcome = val(entry.outcome) or val(entry.status)
  if type(outcome) == 'table' then
    outcome = val(outcome.status) or val(outcome.code) or (outcome.ok and 'applied' or 'failed')
  end
  if outcome == nil and entry.ok ~= nil then
    outcome = entry.ok and 'applied' or (val(entry.code) or 'failed')
  end
  if outcome == nil and type(val(entry.error)) == 'table' then
    outcome = val(entry.error.code) or 'failed'
  end
  return tostring(outcome or '?')
end

--- @param entry table
--- @return string
local function entry_files(entry)
  local names = {}
  for _, f in ipairs(val(entry.files) or {}) do
    if type(f) == 'table' then
      local name = tostring(val(f.path) or '?')
      if val(f.movedTo) then
        name = name .. ' -> ' .. tostring(f.movedTo)
      end
      if val(f.change) then
        name = name .. ' (' .. tostring(f.change) .. ')'
      end
      table.insert(names, name)
    else
      table.insert(names, tostring(f))
    end
  end
  return table.concat(names, ', ')
end

--- The net diff of a history result as text: `netDiff` (text or per-file list) or `net`.
--- @param result table
--- @return string
function M.net_diff(result)
  local net = val(result.netDiff) or val(result.net) or val(result.diff)
  if type(net) == 'table' then
    local parts = {}
    for _, item in ipairs(net) do
      if type(item) == 'table' then
        -- Notes (e.g. "the buffer changed since the agent's last edit") as '#' lines, which
        -- diff syntax and `git apply` both leave alone.
        for _, note in ipairs(val(item.notes) or {}) do
          table.insert(parts, string.format('# %s: %s\n', tostring(val(item.path)), note))
        end
        table.insert(parts, tostring(val(item.diff) or ''))
      else
        table.insert(parts, tostring(item))
      end
    end
    if #parts == 0 then
      -- A map path -> diff.
      local paths = vim.tbl_keys(net)
      table.sort(paths)
      for _, p in ipairs(paths) do
        local d = net[p]
        table.insert(parts, type(d) == 'table' and tostring(val(d.diff) or '') or tostring(d))
      end
    end
    for i, part in ipairs(parts) do
      if part ~= '' and part:sub(-1) ~= '\n' then
        parts[i] = part .. '\n'
      end
    end
    net = table.concat(parts, '')
  end
  return type(net) == 'string' and net or ''
end

--- @param text string
--- @return string[]
local function lines_of(text)
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- @param entry table
--- @return string
local function entry_line(entry)
  local time = val(entry.time) or val(entry.timestamp) or ''
  if type(time) == 'number' then
    time = os.date('%H:%M:%S', math.floor(time))
  elseif type(time) == 'string' then
    time = time:match('T(%d%d:%d%d:%d%d)') or time
  end
  local line = string.format(
    '#%s  %s  %-10s %-12s %s',
    tostring(M.entry_id(entry)),
    time,
    tostring(val(entry.action) or '?'),
    M.entry_outcome(entry),
    entry_files(entry)
  )
  local err = val(entry.error)
  if type(err) == 'table' and val(err.message) then
    line = line .. '  -- ' .. tostring(err.message)
  elseif type(err) == 'string' then
    line = line .. '  -- ' .. err
  end
  return line
end

--- The lines of the history view and which line shows which entry.
--- @param result table agentEdit.history result
--- @return string[] lines, table<integer, table> entry_at
function M.render(result)
  local lines = {
    '# agent-edit history   q: close   <CR>: diff of the edit under the cursor   R: refresh',
  }
  local entry_at = {}
  if result.ok == false then
    table.insert(
      lines,
      string.format('# history unavailable: %s %s', tostring(result.code), tostring(result.message))
    )
    return lines, entry_at
  end
  local entries = M.entries(result)
  table.insert(lines, string.format('# %d edit(s) this session', #entries))
  for _, entry in ipairs(entries) do
    -- One line per entry even if a field holds a newline.
    table.insert(lines, (entry_line(entry):gsub('\n', ' ')))
    entry_at[#lines] = entry
  end
  table.insert(lines, '')
  table.insert(lines, '# net diff of this session')
  local net = M.net_diff(result)
  if net == '' then
    table.insert(lines, '# (no net change)')
  else
    vim.list_extend(lines, lines_of(net))
  end
  return lines, entry_at
end

--- @param bufnr integer
--- @param lines string[]
local function set_lines(bufnr, lines)
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].modified = false
end

--- A scratch buffer that agent-edit's own autocmds never attach to.
--- @param name string
--- @return integer
local function scratch(name)
  local existing = M._scratch[name]
  if existing and vim.api.nvim_buf_is_valid(existing) then
    return existing
  end
  local bufnr = vim.api.nvim_create_buf(false, true)
  M._scratch[name] = bufnr
  vim.bo[bufnr].buftype = 'nofile'
  vim.bo[bufnr].bufhidden = 'wipe'
  vim.bo[bufnr].swapfile = false
  vim.api.nvim_buf_set_name(bufnr, name)
  vim.bo[bufnr].filetype = 'diff'
  return bufnr
end

--- Shows `bufnr` in the history window (reusing a window that shows a history view).
--- @param bufnr integer
--- @return integer win
local function show(bufnr)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      vim.api.nvim_set_current_win(win)
      return win
    end
  end
  vim.cmd('botright split')
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, bufnr)
  return win
end

--- Closes the window of a view, or just drops the buffer when it is the last window.
--- @param bufnr integer
local function close(bufnr)
  local win = vim.fn.bufwinid(bufnr)
  if win ~= -1 and #vim.api.nvim_tabpage_list_wins(0) > 1 then
    vim.api.nvim_win_close(win, true)
  elseif vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_delete(bufnr, { force = true })
  end
end

--- Opens the diff of one entry in the current window; `q` goes back to the history list.
--- @param entry table
--- @param history_buf integer?
function M.open_entry(entry, history_buf)
  local id = M.entry_id(entry)
  local diff = val(entry.diff)
  if type(diff) ~= 'string' or diff == '' then
    -- Large histories may leave per-edit diffs out of the list; ask for this one.
    local view = history_buf and M._views[history_buf]
    local r = require('agent_edit').history(
      { editId = id, format = 'json' },
      { client_id = view and view.client_id }
    )
    if r.ok then
      local one = M.entries(r)[1] or r.entry or r
      diff = type(val(one.diff)) == 'string' and one.diff or M.net_diff(r)
    end
  end
  local bufnr = scratch('agent-edit://edit/' .. tostring(id))
  local lines = {
    '# agent edit #' .. tostring(id) .. '   q: back to the history',
    entry_line(entry),
  }
  local err = val(entry.error)
  if type(err) == 'table' and val(err.hint) then
    table.insert(lines, '# hint: ' .. tostring(err.hint))
  end
  table.insert(lines, '')
  if type(diff) == 'string' and diff ~= '' then
    vim.list_extend(lines, lines_of(diff))
  else
    table.insert(lines, '# (this edit changed nothing)')
  end
  set_lines(bufnr, lines)
  local win = vim.api.nvim_get_current_win()
  if history_buf and vim.fn.bufwinid(history_buf) ~= -1 then
    win = vim.fn.bufwinid(history_buf)
    -- Keep the history buffer alive while its window shows the entry.
    vim.bo[history_buf].bufhidden = 'hide'
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_buf(win, bufnr)
  else
    win = show(bufnr)
  end
  vim.keymap.set('n', 'q', function()
    if history_buf and vim.api.nvim_buf_is_valid(history_buf) then
      vim.api.nvim_win_set_buf(win, history_buf)
      vim.bo[history_buf].bufhidden = 'wipe'
      if vim.api.nvim_buf_is_valid(bufnr) then
        vim.api.nvim_buf_delete(bufnr, { force = true })
      end
    else
      close(bufnr)
    end
  end, { buffer = bufnr, nowait = true, desc = 'agent-edit: back' })
  return bufnr
end

--- Fills a history buffer from a history result.
--- @param bufnr integer
--- @param result table
--- @param client_id integer? the server whose history it is (nil: the current buffer's)
local function fill(bufnr, result, client_id)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local lines, entry_at = M.render(result)
  set_lines(bufnr, lines)
  M._views[bufnr] = { entry_at = entry_at, result = result, client_id = client_id }
end

--- Re-reads the history into every open history view (asynchronously).
function M.refresh()
  for bufnr in pairs(M._views) do
    if not vim.api.nvim_buf_is_valid(bufnr) then
      M._views[bufnr] = nil
    end
  end
  for bufnr, view in pairs(M._views) do
    require('agent_edit').history({ format = 'json' }, {
      client_id = view.client_id,
      callback = function(result)
        fill(bufnr, result, view.client_id)
      end,
    })
  end
end

--- Called for `agentEdit/historyChanged`.
function M.on_changed(_params, _ctx)
  M.refresh()
end

--- `:AgentEditHistory`: opens (or focuses and refreshes) the history view.
--- @param opts table? {edit_id?: show that edit's diff directly, client_id?: whose history
---   (a code lens's server; default: the current buffer's)}
--- @return integer bufnr
function M.open(opts)
  opts = opts or {}
  local result = require('agent_edit').history({ format = 'json' }, { client_id = opts.client_id })
  local bufnr = scratch(HISTORY_NAME)
  fill(bufnr, result, opts.client_id)
  show(bufnr)
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = bufnr,
    once = true,
    callback = function()
      M._views[bufnr] = nil
    end,
  })
  vim.keymap.set('n', 'q', function()
    close(bufnr)
  end, { buffer = bufnr, nowait = true, desc = 'agent-edit: close the history' })
  vim.keymap.set('n', 'R', M.refresh, { buffer = bufnr, desc = 'agent-edit: refresh the history' })
  vim.keymap.set('n', '<CR>', function()
    local view = M._views[bufnr]
    local entry = view and view.entry_at[vim.api.nvim_win_get_cursor(0)[1]]
    if entry then
      M.open_entry(entry, bufnr)
    end
  end, { buffer = bufnr, desc = 'agent-edit: show the diff of this edit' })
  if opts.edit_id ~= nil then
    for _, entry in pairs(M._views[bufnr].entry_at) do
      if tostring(M.entry_id(entry)) == tostring(opts.edit_id) then
        M.open_entry(entry, bufnr)
        break
      end
    end
  end
  return bufnr
end

--- The id of the session's latest applied edit that no later undo has reverted, or nil.
--- @return any
function M.latest_undoable()
  local result = require('agent_edit').history({ format = 'json' })
  if result.ok == false then
    return nil
  end
  local undone = {}
  local entries = M.entries(result)
  -- The server says which entries can be undone; older servers only list outcomes.
  for i = #entries, 1, -1 do
    if val(entries[i].undoable) ~= nil then
      for j = #entries, 1, -1 do
        if entries[j].undoable == true then
          return M.entry_id(entries[j])
        end
      end
      return nil
    end
  end
  for i = #entries, 1, -1 do
    local entry = entries[i]
    local outcome = M.entry_outcome(entry)
    local applied = outcome == 'applied'
    if applied and val(entry.action) == 'undo' then
      local target = val(entry.undoes) or val(entry.undoOf)
        or (type(val(entry.args)) == 'table' and val(entry.args.editId))
        or (type(val(entry.arguments)) == 'table' and val(entry.arguments.editId))
      if target ~= nil then
        undone[tostring(target)] = true
      end
    elseif applied and not undone[tostring(M.entry_id(entry))] and not val(entry.undone) then
      return M.entry_id(entry)
    end
  end
  return nil
end

return M
