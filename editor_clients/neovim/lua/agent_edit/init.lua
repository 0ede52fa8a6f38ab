--- agent_edit: the Neovim client of the agent-edit language server.
---
--- Owns: starting the server with `vim.lsp.start` for buffers in the workspace, the Lua API that
--- Neovim agent plugins call (`read`, `replace`, `apply_patch`, `write`, `history`, `undo`), the
--- user commands, and wiring the applyEdit handler, code lenses and the history view. Every check,
--- plan and diff happens in the server; this file only forwards tables and shows results.

local M = {}

M.name = 'agent_edit'

--- Neovim the plugin needs: 0.11 brought the `client:request(...)` method syntax,
--- `vim.lsp.start(..., {attach = false})` and `vim.str_utfindex(s, encoding)` used here.
M.min_nvim = { 0, 11, 0 }

local defaults = {
  --- Command starting the server; nil means `agent-edit serve` if that executable exists, else
  --- `python3 -m lsp_server serve`.
  cmd = nil,
  --- Extra environment for the server process.
  cmd_env = nil,
  --- Files or folders marking a workspace root, searched upward from a buffer's file. A buffer with
  --- no marker above it uses the current directory as its workspace if the file is inside it.
  root_markers = { '.git', '.hg', '.jj' },
  --- Sent as initializationOptions (and answered to workspace/configuration under `agentEdit`).
  settings = {},
  --- After a verified edit the server asks to save what it touched (agentEdit/saveDocuments):
  --- "clean" writes the buffers that held no unsaved user text before the edit, "never" writes
  --- nothing (and tells the server not to ask). Sets the server's `saveAfterEdit` unless
  --- `settings.saveAfterEdit` is given.
  save_after_edit = 'clean',
  --- How long the API (synchronous or with a callback) waits for the server's answer. The server
  --- itself bounds its wait for the editor, so this only has to outlast that.
  timeout_ms = 10000,
  --- Show the server's code lenses (agent edit #N · undo · diff) in attached buffers.
  codelens = true,
}

--- Options in force (defaults merged with setup's table).
M.config = vim.deepcopy(defaults)

--- Whether setup() ran (the agent plugin adapters call it when the user did not).
M.is_setup = false

local group = vim.api.nvim_create_augroup('agent_edit', { clear = true })

--- @return string[]
function M.default_cmd()
  if vim.fn.executable('agent-edit') == 1 then
    return { 'agent-edit', 'serve' }
  end
  return { 'python3', '-m', 'lsp_server', 'serve' }
end

--- @return string[]
function M.server_cmd()
  return M.config.cmd or M.default_cmd()
end

--- @param path string
--- @return string
local function canonical(path)
  return vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
end

--- @param path string
--- @param dir string
--- @return boolean
local function is_inside(path, dir)
  dir = dir:gsub('/$', '')
  return path == dir or path:sub(1, #dir + 1) == dir .. '/'
end

--- The workspace folder of a file, or nil when the file belongs to no workspace.
--- @param path string absolute
--- @return string?
function M.root_for(path)
  local root = vim.fs.root(path, M.config.root_markers)
  if root then
    return (canonical(root):gsub('/$', ''))
  end
  local cwd = (canonical(vim.fn.getcwd()):gsub('/$', ''))
  if is_inside(path, cwd) then
    return cwd
  end
  return nil
end

--- The agent-edit clients running now (optionally only those attached to `filter.bufnr`).
--- @param filter table? vim.lsp.get_clients filter
--- @return vim.lsp.Client[]
function M.clients(filter)
  -- Neovim keeps listing a client whose server died until a later turn of the event loop; a
  -- request to it fails, so it must not be picked (a new server is started instead).
  return vim.tbl_filter(function(c)
    return not c:is_stopped()
  end, vim.lsp.get_clients(vim.tbl_extend('force', filter or {}, { name = M.name })))
end

--- Client id -> request id -> the function answering that asynchronous call. Neovim never calls
--- the handler of a request whose server exited, so the exit answers them (else each would wait
--- for its timeout, then say only that no answer came).
local pending = {}

--- @param client_id integer
--- @param code integer?
--- @param signal integer?
function M._client_exited(client_id, code, signal)
  local waiting = pending[client_id]
  pending[client_id] = nil
  if waiting == nil then
    return
  end
  vim.schedule(function()
    for _, finish in pairs(waiting) do
      finish({
        ok = false,
        code = 'NO_SERVER',
        message = string.format(
          'the agent-edit server exited (code %s, signal %s) before answering',
          tostring(code),
          tostring(signal)
        ),
        hint = 'read the file again: the edit may have been applied before the server exited; '
          .. 'the next call starts it again',
        details = { exitCode = code, signal = signal },
        committed = {},
      })
    end
  end)
end

--- Client id -> functions waiting for that client's server to be initialized.
local waiting_init = {}

--- Runs `fn` once the client's server is initialized and has been sent the didOpen of every
--- buffer attached to it (Neovim sends those right after the initialize answer; a request sent
--- earlier overtakes them, and the server would answer from the files on disk instead of the
--- user's unsaved text), or at once if that already happened or the client stopped.
--- @param client vim.lsp.Client
--- @param fn fun()
local function when_ready(client, fn)
  if client.initialized or client:is_stopped() then
    fn()
    return
  end
  waiting_init[client.id] = waiting_init[client.id] or {}
  table.insert(waiting_init[client.id], fn)
end

--- on_init (and on_exit) of an agent-edit client: releases the calls waiting for it. Scheduled,
--- because on_init runs before Neovim sends the didOpen of the attached buffers.
--- @param client_id integer
function M._client_ready(client_id)
  local fns = waiting_init[client_id]
  waiting_init[client_id] = nil
  if fns then
    vim.schedule(function()
      for _, fn in ipairs(fns) do
        fn()
      end
    end)
  end
end

local function on_history_changed(_, params, ctx)
  M._last_history_change = params
  require('agent_edit.history').on_changed(params, ctx)
  if M.config.codelens then
    M.refresh_codelens()
  end
end

--- The server's code lenses carry its own commands (`agentEdit.history {format: "diff", editId}`,
--- `agentEdit.undo {editId}`). Sent to the server as they are, their results would be dropped and
--- the user would see nothing; run client-side instead, they open the edit's diff and report the
--- undo's outcome.
local lens_commands = {
  ['agentEdit.history'] = function(command)
    local arg = command.arguments and command.arguments[1]
    local id = type(arg) == 'table' and arg.editId or nil
    require('agent_edit.history').open({ edit_id = id, client_id = ctx and ctx.client_id })
  end,
  ['agentEdit.undo'] = function(command, ctx)
    local arg = command.arguments and command.arguments[1]
    if type(arg) ~= 'table' then
      return
    end
    M.undo(arg, {
      bufnr = ctx and ctx.bufnr,
      client_id = ctx and ctx.client_id,
      callback = function(result)
        M.notify_result(result, 'undo of edit ' .. tostring(arg.editId))
      end,
    })
  end,
}

--- @param root string
--- @return vim.lsp.ClientConfig
local function client_config(root)
  local settings = vim.deepcopy(M.config.settings or {})
  if settings.saveAfterEdit == nil then
    -- The server asks for the save (agentEdit/saveDocuments); the plugin decides what is safe.
    settings.saveAfterEdit = M.config.save_after_edit ~= 'never'
  end
  return {
    name = M.name,
    cmd = M.server_cmd(),
    cmd_env = M.config.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    -- vim.empty_dict: an empty Lua table would be sent as a JSON array.
    init_options = next(settings) and settings or vim.empty_dict(),
    settings = { agentEdit = next(settings) and settings or vim.empty_dict() },
    commands = lens_commands,
    -- Merged over Neovim's defaults. The applyEdit handler (apply_edit.lua) refuses before it
    -- applies anything, so its `applied: false` proves nothing changed (PROTOCOL.md): the server
    -- then reports a refusal as one, instead of waiting for files that will not change.
    capabilities = { experimental = { agentEdit = { refusalAppliesNothing = true } } },
    handlers = {
      -- Looked up per call, so a wrapper installed later (a plugin, a test) takes effect.
      ['workspace/applyEdit'] = function(...)
        return require('agent_edit.apply_edit').handler(...)
      end,
      ['agentEdit/historyChanged'] = on_history_changed,
      ['agentEdit/saveDocuments'] = function(...)
        return require('agent_edit.apply_edit').save_documents(...)
      end,
    },
    on_init = function(client)
      -- Each didOpen followed by the buffer's final newline (a resent one too).
      require('agent_edit.final_newline').follow_opens(client)
      M._client_ready(client.id)
    end,
    on_exit = function(code, signal, client_id)
      M._client_ready(client_id)
      M._client_exited(client_id, code, signal)
    end,
    on_attach = function(client, bufnr)
      -- Whether the text ends with a newline: Neovim's own messages do not tell the server.
      require('agent_edit.final_newline').track(client, bufnr)
      if M.config.codelens and client:supports_method('textDocument/codeLens') then
        vim.lsp.codelens.refresh({ bufnr = bufnr })
      end
    end,
  }
end

--- Whether agent-edit should manage a buffer: a normal buffer showing a local file.
--- @param bufnr integer
--- @return string? path the buffer's absolute path when it should
local function managed_path(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  return canonical(name)
end

--- Attaches the agent-edit client of the buffer's workspace (starting it if needed).
--- @param bufnr integer
--- @return integer? client_id
function M.attach(bufnr)
  local path = managed_path(bufnr)
  if path == nil then
    return nil
  end
  local root = M.root_for(path)
  if root == nil then
    return nil
  end
  local id = vim.lsp.start(client_config(root), { bufnr = bufnr })
  -- A file of a repository nested in another workspace (a submodule, a vendored repo) is that
  -- workspace's file too: its server must see the buffer, or it would read the disk instead of
  -- the user's unsaved text. And a server started now must see the nested files already open.
  for _, client in ipairs(M.clients()) do
    local client_root = client.root_dir and (canonical(client.root_dir):gsub('/$', ''))
    if client.id ~= id and client_root and is_inside(path, client_root) then
      vim.lsp.buf_attach_client(bufnr, client.id)
    end
  end
  if id then
    M._attach_inside(root, id)
  end
  return id
end

--- Attaches every loaded buffer of a file inside `root` to the client `id` (a buffer whose own
--- workspace is a repository nested in `root` included).
--- @param root string
--- @param id integer
function M._attach_inside(root, id)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local path = managed_path(bufnr)
      if path and is_inside(path, root) and not vim.lsp.buf_is_attached(bufnr, id) then
        vim.lsp.buf_attach_client(bufnr, id)
      end
    end
  end
end

--- The client for a workspace root, started without attaching a buffer when none runs yet (an agent
--- may edit before the user opened any file).
--- @param root string
--- @return vim.lsp.Client?
local function client_for_root(root)
  for _, client in ipairs(M.clients()) do
    if client.root_dir and (canonical(client.root_dir):gsub('/$', '')) == root then
      return client
    end
  end
  local id = vim.lsp.start(client_config(root), { attach = false })
  if id == nil then
    return nil
  end
  -- Open buffers of this workspace attached to no running server (its server exited; Neovim
  -- detached them): attach them to this one, or it would read the files on disk instead of the
  -- user's unsaved text and write edits to disk under their buffers.
  M._attach_inside(root, id)
  return vim.lsp.get_client_by_id(id)
end

--- Whether `root` is a workspace the user chose: a server runs for it, it is the current
--- directory's, or a file they opened (a loaded buffer) belongs to it.
--- @param root string
--- @return boolean
function M.is_user_root(root)
  for _, client in ipairs(M.clients()) do
    if client.root_dir and (canonical(client.root_dir):gsub('/$', '')) == root then
      return true
    end
  end
  local cwd = (canonical(vim.fn.getcwd()):gsub('/$', ''))
  if (M.root_for(cwd .. '/.') or cwd) == root then
    return true
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local path = managed_path(bufnr)
      if path and M.root_for(path) == root then
        return true
      end
    end
  end
  return false
end

--- Picks the client that should run a command: the one attached to `opts.bufnr` (or the current
--- buffer), else the one whose workspace holds the command's `path`, else the current directory's.
--- @param args table
--- @param opts table
--- @return vim.lsp.Client?
function M.pick_client(args, opts)
  if opts.client_id then
    -- A code lens's command goes to the server that made the lens: edit ids are per server.
    local client = vim.lsp.get_client_by_id(opts.client_id)
    if client and not client:is_stopped() then
      return client
    end
  end
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local attached = M.clients({ bufnr = bufnr })
  if attached[1] and not opts.bufnr and type(args.path) == 'string' then
    -- An explicit path wins over whatever buffer happens to be current.
    attached = {}
  end
  if attached[2] then
    -- A file of a nested repository is attached to its own workspace's server and to the
    -- enclosing one's: relative paths and edit ids stay those of its own workspace.
    local path = managed_path(bufnr)
    local own = path and M.root_for(path)
    for _, client in ipairs(attached) do
      if own and client.root_dir and (canonical(client.root_dir):gsub('/$', '')) == own then
        return client
      end
    end
  end
  if attached[1] then
    return attached[1]
  end
  local path = type(args.path) == 'string' and args.path or nil
  if path and path:match('^file://') then
    path = vim.uri_to_fname(path)
  end
  local root
  if path and path:sub(1, 1) == '/' then
    root = M.root_for(canonical(path))
    if root and not M.is_user_root(root) then
      -- A path an agent named must not choose the workspace: a server started for any folder
      -- with a .git above it would let the agent edit every repository on the machine. Only
      -- the user's workspaces (a server running, the current directory's, a file they opened)
      -- are served; another path goes to one of those, whose server refuses it
      -- (OUTSIDE_WORKSPACE) unless one of its folders holds it.
      local holder = nil
      for _, client in ipairs(M.clients()) do
        if client.root_dir and is_inside(canonical(path), canonical(client.root_dir)) then
          holder = client
        end
      end
      if holder then
        return holder
      end
      root = nil
    end
  end
  if root == nil then
    -- root_for takes a file path; '.' stands for "a file in the current directory".
    local cwd = (canonical(vim.fn.getcwd()):gsub('/$', ''))
    local cwd_root = M.root_for(cwd .. '/.') or cwd
    local clients = M.clients()
    -- The only server running serves a path relative to nothing else, unless the user works in
    -- the current directory's workspace (a file of it is open) and that server has exited:
    -- the path is that workspace's as before, not another workspace's that happens to run.
    if #clients == 1 and not M._root_has_buffers(cwd_root) then
      return clients[1]
    end
    root = cwd_root
  end
  return client_for_root(root)
end

--- Whether a loaded buffer shows a file whose workspace is `root`.
--- @param root string
--- @return boolean
function M._root_has_buffers(root)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local path = managed_path(bufnr)
      if path and M.root_for(path) == root then
        return true
      end
    end
  end
  return false
end

--- Deep copy of `t` in which every empty table is a JSON object, since the arguments are objects
--- (`{}` would otherwise go out as `[]`).
--- @param t any
--- @return any
local function as_json_object(t)
  if type(t) ~= 'table' or getmetatable(t) ~= nil then
    return t
  end
  if next(t) == nil then
    return vim.empty_dict()
  end
  local out = {}
  for k, v in pairs(t) do
    out[k] = as_json_object(v)
  end
  return out
end

--- A failure produced by the client itself (no server, no answer, JSON-RPC error), in the shape
--- of the server's failure results so callers handle one kind of table.
--- @return table
function M.client_failure(code, message, hint, details)
  return {
    ok = false,
    code = code,
    message = message,
    hint = hint,
    details = details or vim.empty_dict(),
    committed = {},
  }
end

--- Byte position of the first byte of `s` that is not part of valid UTF-8 (overlong forms,
--- UTF-16 surrogates and code points past U+10FFFF included), or nil.
--- @param s string
--- @return integer?
local function invalid_utf8_at(s)
  local i = s:find('[\128-\255]')
  local n = #s
  while i and i <= n do
    local c = s:byte(i)
    if c < 0x80 then
      i = i + 1
    else
      local len
      if c >= 0xC2 and c <= 0xDF then
        len = 2
      elseif c >= 0xE0 and c <= 0xEF then
        len = 3
      elseif c >= 0xF0 and c <= 0xF4 then
        len = 4
      else
        return i
      end
      for j = 1, len - 1 do
        local cc = s:byte(i + j)
        if cc == nil or cc < 0x80 or cc > 0xBF then
          return i
        end
      end
      local c2 = s:byte(i + 1)
      if
        (c == 0xE0 and c2 < 0xA0)
        or (c == 0xED and c2 > 0x9F)
        or (c == 0xF0 and c2 < 0x90)
        or (c == 0xF4 and c2 > 0x8F)
      then
        return i
      end
      i = s:find('[\128-\255]', i + len) or n + 1
    end
  end
  return nil
end

M.invalid_utf8_at = invalid_utf8_at

--- The first string in `args` (keys included) that is not valid UTF-8, as {field, byte}. Such a
--- request cannot be sent: the server answers it with a JSON-RPC parse error that carries no
--- request id, so the caller would wait for an answer that never comes.
--- @param value any
--- @param where string
--- @return table?
local function find_invalid_utf8(value, where)
  if type(value) == 'string' then
    local at = invalid_utf8_at(value)
    return at and { field = where, byte = at } or nil
  end
  if type(value) ~= 'table' then
    return nil
  end
  for k, v in pairs(value) do
    local name = type(k) == 'string' and k or ('[' .. tostring(k) .. ']')
    local key_at = type(k) == 'string' and invalid_utf8_at(k) or nil
    if key_at then
      -- Never echo the bad bytes: the message itself must be valid UTF-8.
      return { field = (where == '' and '' or where .. '.') .. '<a key>', byte = key_at }
    end
    local bad = find_invalid_utf8(v, where == '' and name or (where .. '.' .. name))
    if bad then
      return bad
    end
  end
  return nil
end

--- @param timeout integer ms
--- @return table
local function timeout_failure(timeout)
  return M.client_failure(
    'TIMEOUT',
    string.format('no answer from the server within %d ms', timeout),
    'read the file again before retrying: the edit may still have been applied',
    { timeoutMs = timeout }
  )
end

--- @param err table? lsp.ResponseError
--- @param result any
--- @return table
local function to_result(err, result)
  if err then
    return M.client_failure(
      'RPC_ERROR',
      'the server answered with a JSON-RPC error: ' .. tostring(err.message),
      'check the arguments against the command (a malformed argument is InvalidParams)',
      { rpcCode = err.code, rpcMessage = err.message, rpcData = err.data }
    )
  end
  if type(result) ~= 'table' then
    return M.client_failure(
      'RPC_ERROR',
      'the server answered without a result table',
      'see :LspLog; the server may have failed',
      { result = result }
    )
  end
  return result
end

--- Runs `agentEdit.<verb>` with `args` as the single argument.
--- Synchronous unless `opts.callback` is given: then it returns nil at once and calls
--- `opts.callback(result)` exactly once later (on the main loop): the server's result, or a
--- failure of the same shape (TIMEOUT if the server has not answered within `timeout_ms`,
--- NO_SERVER at once if it exits first).
--- @param verb string
--- @param args table
--- @param opts table? {bufnr?, client_id?, timeout_ms?, callback?}
--- @return table?
function M.execute(verb, args, opts)
  vim.validate('args', args, 'table')
  opts = opts or {}
  local timeout = opts.timeout_ms or M.config.timeout_ms
  if opts.callback == nil then
    -- The synchronous call is the asynchronous one waited for, so both end the same way (Neovim's
    -- request_sync would wait out its timeout for a server that already exited).
    local got
    M.execute(verb, args, vim.tbl_extend('force', opts, {
      callback = function(result)
        got = result
      end,
    }))
    -- The call answers by its own timeout; this only has to outlast it.
    vim.wait(timeout + 1000, function()
      return got ~= nil
    end, 5)
    return got or timeout_failure(timeout)
  end
  local callback = opts.callback
  local bad = find_invalid_utf8(args, '')
  local client = nil
  local failure
  if bad then
    failure = M.client_failure(
      'INVALID_ARGUMENT',
      string.format(
        '%s is not valid UTF-8 (byte %d); nothing was sent to the server',
        bad.field,
        bad.byte
      ),
      'send text as valid UTF-8',
      { argument = bad.field, byte = bad.byte }
    )
  else
    client = M.pick_client(args, opts)
    if client == nil then
      failure = M.client_failure(
        'NO_SERVER',
        'the agent-edit server is not running and could not be started',
        'run :checkhealth agent_edit',
        { cmd = M.server_cmd() }
      )
    end
  end
  if client == nil then
    vim.schedule(function()
      callback(failure)
    end)
    return nil
  end
  local params = {
    command = 'agentEdit.' .. verb,
    arguments = { as_json_object(args) },
  }
  -- Exactly one answer: the server's, TIMEOUT when it does not come (an agent plugin waits for
  -- this callback; without a bound it would wait forever), or NO_SERVER when the server exits.
  local done, timer, request_id = false, nil, nil
  local function finish(result)
    if done then
      return
    end
    done = true
    if timer and not timer:is_closing() then
      timer:stop()
      timer:close()
    end
    if request_id and pending[client.id] then
      pending[client.id][request_id] = nil
    end
    callback(result)
  end
  timer = vim.uv.new_timer()
  if timer then
    timer:start(
      timeout,
      0,
      vim.schedule_wrap(function()
        if done then
          return
        end
        -- As request_sync does on its timeout; a late answer is dropped by `finish`.
        if request_id then
          pcall(client.cancel_request, client, request_id)
        end
        finish(timeout_failure(timeout))
      end)
    )
  end
  when_ready(client, function()
    if done then
      return
    end
    local function on_answer(err, result)
      finish(to_result(err, result))
    end
    local sent, ok, id =
      pcall(client.request, client, 'workspace/executeCommand', params, on_answer, opts.bufnr)
    if not sent then
      -- Arguments JSON cannot carry (a boolean or table as a key, a function): Neovim raises
      -- while encoding, before anything is sent. A refusal, not a Lua error thrown at the
      -- agent plugin followed by a TIMEOUT for the same call.
      local why = tostring(ok)
      vim.schedule(function()
        finish(
          M.client_failure(
            'INVALID_ARGUMENT',
            'the arguments cannot be sent as JSON (' .. why .. '); nothing was sent to the server',
            'pass one JSON object: string keys, and strings, numbers, booleans, lists or objects',
            { reason = why }
          )
        )
      end)
      return
    end
    request_id = id
    if not ok then
      vim.schedule(function()
        finish(
          M.client_failure('NO_SERVER', 'the agent-edit server stopped', 'restart it: :LspRestart')
        )
      end)
    elseif request_id and not done then
      pending[client.id] = pending[client.id] or {}
      pending[client.id][request_id] = finish
    end
  end)
  return nil
end

--- `agentEdit.read {path, startLine?, endLine?, lineNumbers?}`
function M.read(args, opts)
  return M.execute('read', args, opts)
end

--- `agentEdit.replace {path, oldText, newText, replaceAll?, expect?, dryRun?, match?}`
function M.replace(args, opts)
  return M.execute('replace', args, opts)
end

--- `agentEdit.applyPatch {patch, expect?, dryRun?}`
function M.apply_patch(args, opts)
  return M.execute('applyPatch', args, opts)
end

--- `agentEdit.write {path, text, expect?, dryRun?}`
function M.write(args, opts)
  return M.execute('write', args, opts)
end

--- `agentEdit.history {format?, editId?, limit?, texts?, netLimit?}`
function M.history(args, opts)
  return M.execute('history', args or {}, opts)
end

--- `agentEdit.undo {editId, dryRun?}`
function M.undo(args, opts)
  return M.execute('undo', args, opts)
end

--- Refreshes code lenses in every buffer an agent-edit client is attached to.
function M.refresh_codelens()
  for _, client in ipairs(M.clients()) do
    if client:supports_method('textDocument/codeLens') then
      for bufnr in pairs(client.attached_buffers or {}) do
        if vim.api.nvim_buf_is_loaded(bufnr) then
          vim.lsp.codelens.refresh({ bufnr = bufnr })
        end
      end
    end
  end
end

--- Failure codes after which nothing was changed (the server checked, or nothing was sent).
--- Any other code (TIMEOUT, UNVERIFIED, PARTIAL, NO_SERVER after the server exited mid-call, a
--- code added later) may come after a change landed: the user must not be told otherwise.
local NOTHING_CHANGED = {
  PARSE_ERROR = true,
  INVALID_ARGUMENT = true,
  NOT_FOUND = true,
  ALREADY_EXISTS = true,
  OUTSIDE_WORKSPACE = true,
  DENIED = true,
  BINARY = true,
  TOO_LARGE = true,
  INVALID_ENCODING = true,
  STALE = true,
  NO_MATCH = true,
  AMBIGUOUS = true,
  CLIENT_REJECTED = true,
  NOT_APPLIED = true,
  PARTIAL_ROLLED_BACK = true,
  CONFLICT = true,
  UNSUPPORTED = true,
}

--- Whether a failure result means that nothing was changed.
--- @param result table
--- @return boolean
function M.nothing_changed(result)
  return result.ok ~= true and NOTHING_CHANGED[result.code] == true
end

--- Reports a result table to the user (for the commands; the API returns tables instead).
--- @param result table
--- @param what string
function M.notify_result(result, what)
  if result.ok then
    vim.notify(string.format('agent-edit: %s done (edit %s)', what, tostring(result.editId)))
  else
    local msg = string.format(
      'agent-edit: %s %s: %s %s',
      what,
      M.nothing_changed(result) and 'refused' or 'did not complete',
      tostring(result.code),
      tostring(result.message)
    )
    if result.hint and result.hint ~= vim.NIL then
      msg = msg .. ' (' .. tostring(result.hint) .. ')'
    end
    vim.notify(msg, vim.log.levels.WARN)
  end
end

--- `:AgentEditUndo [id]`: undo an edit, the session's latest applied one when no id is given.
--- @param id string?
function M.undo_command(id)
  if id == nil or id == '' then
    id = require('agent_edit.history').latest_undoable()
    if id == nil then
      vim.notify('agent-edit: no agent edit to undo in this session', vim.log.levels.WARN)
      return
    end
  end
  local edit_id = tonumber(id) or id
  local result = M.undo({ editId = edit_id })
  M.notify_result(result, 'undo of edit ' .. tostring(id))
  return result
end

--- The V4A patch inside `text` (prose or a code fence around it left out), or nil.
--- @param text string
--- @return string?
function M.extract_patch(text)
  local start = text:find('*** Begin Patch', 1, true)
  if not start then
    return nil
  end
  local stop = text:find('*** End Patch', start, true)
  if not stop then
    return text:sub(start)
  end
  return text:sub(start, stop + #'*** End Patch' - 1) .. '\n'
end

--- `:[range]AgentEditApplyPatch [{register}]`: applies a patch a person has (from a chat, a
--- review, a colleague) with the same checks as an agent's: all files or none, against what the
--- buffers show now, recorded in the history. The patch comes from the register when one is
--- given, else from the range (or the whole current buffer). On success the edit's diff opens.
--- @param cmd table the user command's arguments (`args`, `range`, `line1`, `line2`)
function M.apply_patch_command(cmd)
  local text, from
  if cmd.args ~= nil and cmd.args ~= '' then
    from = 'register ' .. cmd.args
    text = vim.fn.getreg(cmd.args)
  else
    from = 'buffer'
    local first, last = 0, -1
    if cmd.range and cmd.range > 0 then
      first, last = cmd.line1 - 1, cmd.line2
    end
    text = table.concat(vim.api.nvim_buf_get_lines(0, first, last, false), '\n') .. '\n'
  end
  local patch = type(text) == 'string' and M.extract_patch(text) or nil
  if not patch then
    local msg = string.format(
      "agent-edit: the %s holds no patch; it needs one from '*** Begin Patch' to '*** End Patch'",
      from
    )
    vim.notify(msg, vim.log.levels.WARN)
    return { ok = false, code = 'NO_PATCH', message = msg }
  end
  local result = M.apply_patch({ patch = patch })
  if result.ok then
    local files = {}
    for _, f in ipairs(result.files or {}) do
      table.insert(files, (f.movedTo ~= nil and f.movedTo ~= vim.NIL) and f.movedTo or f.path)
    end
    vim.notify(string.format(
      'agent-edit: applied the patch from the %s to %s (edit %s; :AgentEditUndo reverts it)',
      from,
      table.concat(files, ', '),
      tostring(result.editId)
    ))
    local h = M.history({ editId = result.editId, format = 'json' })
    local history = require('agent_edit.history')
    local entry = h.ok and history.entries(h)[1] or nil
    if entry then
      history.open_entry(entry)
    end
  elseif M.nothing_changed(result) then
    vim.notify(
      string.format(
        'agent-edit: the patch from the %s was not applied; nothing changed: %s',
        from,
        tostring(result.message)
      ),
      vim.log.levels.WARN
    )
  else
    -- TIMEOUT, UNVERIFIED, PARTIAL...: part or all of it may have landed; the result says what.
    M.notify_result(result, 'the patch from the ' .. from)
  end
  return result
end

local function create_commands()
  vim.api.nvim_create_user_command('AgentEditHistory', function()
    require('agent_edit.history').open()
  end, { desc = "agent-edit: show the session's agent edits and net diff" })
  vim.api.nvim_create_user_command('AgentEditUndo', function(cmd)
    M.undo_command(cmd.args)
  end, { nargs = '?', desc = 'agent-edit: undo an agent edit (default: the latest)' })
  vim.api.nvim_create_user_command('AgentEditApplyPatch', function(cmd)
    M.apply_patch_command(cmd)
  end, {
    nargs = '?',
    range = '%',
    desc = 'agent-edit: apply a V4A patch from a register, the range or the current buffer',
  })
end

--- Starts agent-edit for buffers in the workspace.
--- @param opts table? {cmd?, cmd_env?, root_markers?, settings?, save_after_edit?, timeout_ms?,
---   codelens?}
function M.setup(opts)
  if vim.version.lt(vim.version(), M.min_nvim) then
    vim.notify(
      'agent-edit needs Neovim ' .. table.concat(M.min_nvim, '.') .. ' or newer; not started',
      vim.log.levels.ERROR
    )
    return
  end
  M.is_setup = true
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.root_markers then
    M.config.root_markers = opts.root_markers
  end
  require('agent_edit.apply_edit').options.save_after_edit = M.config.save_after_edit
  -- Neovim's incremental sync misplaces a change that leaves one empty line (sync_fix.lua).
  require('agent_edit.sync_fix').install()
  vim.api.nvim_clear_autocmds({ group = group })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'FileType' }, {
    group = group,
    callback = function(ev)
      M.attach(ev.buf)
    end,
  })
  -- What the disk held when Neovim last read or wrote each file: a save after an agent edit
  -- must not overwrite a file another program changed since (apply_edit.save_documents).
  local disk_events = { 'BufReadPost', 'BufNewFile', 'BufWritePost', 'FileChangedShellPost' }
  vim.api.nvim_create_autocmd(disk_events, {
    group = group,
    callback = function(ev)
      require('agent_edit.apply_edit').note_disk(ev.buf)
    end,
  })
  -- The user's :w with 'fixeol' added a final newline the buffer's 'eol' does not hold.
  vim.api.nvim_create_autocmd('BufWritePost', {
    group = group,
    callback = function(ev)
      require('agent_edit.final_newline').written(ev.buf, ev.match)
    end,
  })
  -- The user changed 'eol' (:set noeol): the text's final newline with it.
  vim.api.nvim_create_autocmd('OptionSet', {
    group = group,
    pattern = 'endofline',
    callback = function()
      local final_newline = require('agent_edit.final_newline')
      if not final_newline.applying then -- an agent edit tells the server once it is done
        final_newline.declare_all(vim.api.nvim_get_current_buf())
      end
    end,
  })
  -- The user changed 'fileformat': every line break of the text with it (sync_fix.lua).
  vim.api.nvim_create_autocmd('OptionSet', {
    group = group,
    pattern = 'fileformat',
    callback = function()
      require('agent_edit.sync_fix').resend(vim.api.nvim_get_current_buf())
    end,
  })
  if M.config.codelens then
    vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave' }, {
      group = group,
      callback = function(ev)
        local clients = vim.lsp.get_clients({ name = M.name, bufnr = ev.buf })
        if clients[1] and clients[1]:supports_method('textDocument/codeLens') then
          vim.lsp.codelens.refresh({ bufnr = ev.buf })
        end
      end,
    })
  end
  create_commands()
  -- Buffers opened before setup ran (lazy loading) get attached too.
  local apply_edit = require('agent_edit.apply_edit')
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      M.attach(bufnr)
      if apply_edit._disk_seen[bufnr] == nil then
        -- Read before setup: the disk as it is now is the best known.
        apply_edit.note_disk(bufnr)
      end
    end
  end
end

return M
