--- agent_edit.tools: the agent-edit tools as Neovim agent plugins (codecompanion, avante) offer
--- them to a model, defined once.
---
--- Owns: `M.specs`, the ONE table of tool names, descriptions and argument schemas (JSON Schema,
--- the same argument names and types as the server's commands; tests/clients compare it with the
--- server's own schemas), running a tool call through the plugin's asynchronous API, and the text
--- a model reads back: the whole result, or the whole refusal (code, message, hint, details).
--- The plugin adapters (agent_edit.codecompanion, agent_edit.avante) only reshape these.
--- Every edit goes through the server as one versioned workspace/applyEdit, so it lands in the
--- buffer as the user sees it (unsaved text kept) and is saved only as `save_after_edit` says.

local M = {}

--- Tool names are `agent_edit_<name>`: short, and distinct from each plugin's built-in tools
--- (avante runs tools named like its own edit tools on partial, streaming input).
M.prefix = 'agent_edit_'

local path_property = {
  type = 'string',
  description = 'Workspace-relative path (preferred), absolute path or file:// URI.',
}

local dry_run_property = {
  type = 'boolean',
  description = 'Only check and show the diff; change nothing.',
}

--- The precondition an edit may carry (the server's EXPECT_FIELDS).
local function expect_token()
  return {
    type = 'object',
    description = 'Precondition: the version or sha256 a read of this file returned; the edit is '
      .. "refused (STALE) if the file is no longer that text. Omit to use this session's last "
      .. 'read of the file.',
    properties = {
      version = { type = 'integer', description = 'The version returned by agent_edit_read.' },
      sha256 = { type = 'string', description = 'The sha256 returned by agent_edit_read.' },
    },
  }
end

--- Each entry: `name` (the tool is `agent_edit_<name>`), `command` (the server command it runs),
--- `edits` (changes files; plugins may ask the user first), `description`, `parameters` (JSON
--- Schema of the command's one argument object).
M.specs = {
  {
    name = 'read',
    command = 'agentEdit.read',
    edits = false,
    description = 'Read a file exactly as the editor shows it now: the open buffer with the '
      .. "user's unsaved changes if it is open, else the file on disk. Returns the text and the "
      .. 'version and sha256 that later edits are checked against. Read a file before editing '
      .. 'it, and read it again after a STALE refusal (the user or a tool changed it).',
    parameters = {
      type = 'object',
      properties = {
        path = path_property,
        startLine = { type = 'integer', description = 'First line to return (1-based).' },
        endLine = { type = 'integer', description = 'Last line to return (1-based, inclusive).' },
        lineNumbers = {
          type = 'boolean',
          description = 'Prefix each line with its number (default: true for a line range, '
            .. 'false for the whole file). Never copy these numbers into oldText.',
        },
      },
      required = { 'path' },
    },
  },
  {
    name = 'replace',
    command = 'agentEdit.replace',
    edits = true,
    description = 'Replace one exact occurrence of oldText with newText in one file, applied to '
      .. "the editor's buffer (the user's unsaved changes elsewhere are kept). Use it for a "
      .. 'change in one place; use agent_edit_apply_patch for changes in several places or '
      .. 'files. oldText must match exactly once: include enough surrounding lines to make it '
      .. 'unique, or set replaceAll. Nothing changes when it is refused: STALE (the file '
      .. 'changed since you read it: read it again), NO_MATCH (with the closest lines), '
      .. 'AMBIGUOUS (with every matching line). Returns the diff of what changed.',
    parameters = {
      type = 'object',
      properties = {
        path = path_property,
        oldText = {
          type = 'string',
          description = 'The exact text to replace, copied from the file (no line numbers).',
        },
        newText = { type = 'string', description = 'The replacement text.' },
        replaceAll = {
          type = 'boolean',
          description = 'Replace every occurrence instead of requiring exactly one.',
        },
        expect = expect_token(),
        dryRun = dry_run_property,
        match = {
          type = 'string',
          enum = { 'exact', 'lenient' },
          description = 'lenient also accepts differences in surrounding whitespace and Unicode '
            .. 'quotes or dashes; the match must still be unique. Default exact.',
        },
      },
      required = { 'path', 'oldText', 'newText' },
    },
  },
  {
    name = 'apply_patch',
    command = 'agentEdit.applyPatch',
    edits = true,
    description = "Apply a V4A patch to one or more files, all files or none: '*** Begin "
      .. "Patch', then per file '*** Add File: path' (lines prefixed '+'), '*** Delete File: "
      .. "path', or '*** Update File: path' (optionally '*** Move to: new/path') with hunks "
      .. "introduced by '@@' (optionally '@@ def name' as an anchor) and lines prefixed ' ' "
      .. "(context, 3 lines around each change), '-' (remove), '+' (add); then '*** End "
      .. "Patch'. Relative paths. Every hunk is checked against what the editor's buffers show "
      .. 'now before anything changes; a refusal says which hunk failed and why, and changes '
      .. 'nothing.',
    parameters = {
      type = 'object',
      properties = {
        patch = {
          type = 'string',
          description = "The whole patch, from '*** Begin Patch' to '*** End Patch'.",
        },
        expect = {
          type = 'object',
          description = 'Optional preconditions per path: {"path": {"version": N} or '
            .. '{"sha256": "..."}}.',
          additionalProperties = expect_token(),
        },
        dryRun = dry_run_property,
      },
      required = { 'patch' },
    },
  },
  {
    name = 'write',
    command = 'agentEdit.write',
    edits = true,
    description = 'Create a new file, or overwrite a whole existing file, through the editor. '
      .. 'Creating requires that the file does not exist (ALREADY_EXISTS otherwise); '
      .. 'overwriting requires that you read it in this session and it has not changed since, '
      .. 'or an expect precondition. Prefer agent_edit_replace or agent_edit_apply_patch for '
      .. 'changes to existing files.',
    parameters = {
      type = 'object',
      properties = {
        path = path_property,
        text = { type = 'string', description = 'The complete new content of the file.' },
        expect = expect_token(),
        dryRun = dry_run_property,
      },
      required = { 'path', 'text' },
    },
  },
  {
    name = 'history',
    command = 'agentEdit.history',
    edits = false,
    description = 'List the edits made in this session (id, time, action, files, outcome, diff '
      .. 'or refusal) and the net diff per file. Use it to review what you changed or to find '
      .. 'the editId to undo.',
    parameters = {
      type = 'object',
      properties = {
        format = {
          type = 'string',
          enum = { 'json', 'diff' },
          description = "json: the entries (default); diff: the session's net diff as a unified "
            .. 'diff.',
        },
        editId = { type = 'integer', description = 'Only this edit.' },
        limit = { type = 'integer', description = 'At most this many entries (default 200).' },
        texts = {
          type = 'boolean',
          description = "The edit's texts before and after (with editId) instead of entries.",
        },
        netLimit = {
          type = 'integer',
          description = 'At most this many files in the net diff.',
        },
      },
      required = {},
    },
  },
  {
    name = 'undo',
    command = 'agentEdit.undo',
    edits = true,
    description = 'Revert one earlier edit by its editId (from an edit result or '
      .. 'agent_edit_history), only if the lines it changed are still as it left them; '
      .. 'otherwise CONFLICT with the lines that differ, and nothing changes. The undo is '
      .. 'itself recorded as an edit.',
    parameters = {
      type = 'object',
      properties = {
        editId = { type = 'integer', description = 'The id of the edit to revert.' },
        dryRun = dry_run_property,
      },
      required = { 'editId' },
    },
  },
}

--- @param spec table
--- @return string
function M.tool_name(spec)
  return M.prefix .. spec.name
end

--- The spec of a tool, by short name (`replace`) or tool name (`agent_edit_replace`).
--- @param name string
--- @return table?
function M.spec(name)
  for _, spec in ipairs(M.specs) do
    if spec.name == name or M.tool_name(spec) == name then
      return spec
    end
  end
  return nil
end

--- A failure in the shape of the server's results (the plugin's own constructor).
local function failure(code, message, hint, details)
  return require('agent_edit').client_failure(code, message, hint, details)
end

--- Runs one tool call through the plugin's asynchronous API. `callback(result)` is called exactly
--- once, on the main loop, with the server's result table or a failure of the same shape: a
--- plugin waits for it, and the model must learn why nothing happened, so a Lua error here is a
--- result too, never a hang.
--- @param spec table
--- @param args any the decoded tool arguments as the plugin hands them
--- @param callback fun(result: table)
--- @param opts table? {timeout_ms?}
function M.run(spec, args, callback, opts)
  opts = opts or {}
  local called = false
  local function once(result)
    if called then
      return
    end
    called = true
    callback(result)
  end
  -- A tool with no required argument may be called with no arguments at all.
  if args == nil or args == vim.NIL then
    args = {}
  end
  if type(args) ~= 'table' then
    vim.schedule(function()
      once(
        failure(
          'INVALID_ARGUMENT',
          string.format('%s takes one JSON object, got %s', M.tool_name(spec), type(args)),
          'Call the tool with an object holding the fields of its schema.'
        )
      )
    end)
    return
  end
  local verb = spec.command:gsub('^agentEdit%.', '')
  local ok, err = pcall(require('agent_edit').execute, verb, args, {
    callback = function(result)
      once(result)
    end,
    timeout_ms = opts.timeout_ms,
  })
  if not ok then
    vim.schedule(function()
      once(
        failure(
          'CLIENT_ERROR',
          'Neovim failed to run the tool: ' .. tostring(err),
          'Nothing was sent to the server; check the arguments, or ask the user.'
        )
      )
    end)
  end
end

--- @param v any
--- @return boolean
local function present(v)
  return v ~= nil and v ~= vim.NIL
end

--- The text a model reads for a result. A success: the result as JSON, then the file text (read)
--- and the diff as they are. A refusal or failure: `CODE: message` and `hint: ...` first, then
--- the whole result as JSON (details such as the closest lines, the versions, what was
--- committed): the model needs all of it to retry correctly.
--- @param result table
--- @return string
function M.model_text(result)
  local summary = {}
  for k, v in pairs(result) do
    if k ~= 'text' and k ~= 'diff' then
      summary[k] = v
    end
  end
  local ok_enc, json = pcall(vim.json.encode, summary)
  if not ok_enc then
    json = vim.inspect(summary)
  end
  local parts = {}
  if result.ok ~= true then
    table.insert(parts, string.format('%s: %s', tostring(result.code), tostring(result.message)))
    if present(result.hint) then
      table.insert(parts, 'hint: ' .. tostring(result.hint))
    end
  end
  table.insert(parts, json)
  if type(result.text) == 'string' then
    table.insert(parts, result.text)
  end
  if type(result.diff) == 'string' and result.diff ~= '' then
    table.insert(parts, 'diff:\n' .. result.diff)
  end
  return table.concat(parts, '\n')
end

--- What the call was about, for the user (`app.py`, `edit 3`, `3 files`).
--- @param args any
--- @return string
function M.target(args)
  if type(args) ~= 'table' then
    return ''
  end
  if type(args.path) == 'string' then
    -- Shown in the chat and logs, which must stay valid UTF-8 whatever the model sent.
    if require('agent_edit').invalid_utf8_at(args.path) then
      return '(a path that is not UTF-8)'
    end
    return args.path
  end
  if type(args.patch) == 'string' then
    local files = {}
    for path in args.patch:gmatch('\n%*%*%* %a+ File: ([^\n]+)') do
      if not require('agent_edit').invalid_utf8_at(path) then
        table.insert(files, path)
      end
    end
    return table.concat(files, ', ')
  end
  if type(args.editId) == 'number' then
    return 'edit ' .. tostring(args.editId)
  end
  return ''
end

--- A one-line account for the user's chat window.
--- @param spec table
--- @param args any
--- @param result table
--- @return string
function M.user_text(spec, args, result)
  local what = vim.trim(M.tool_name(spec) .. ' ' .. M.target(args))
  if result.ok ~= true then
    -- "refused" only where nothing changed: after a TIMEOUT or UNVERIFIED the edit may be in.
    return string.format(
      '%s %s: %s %s',
      what,
      require('agent_edit').nothing_changed(result) and 'refused' or 'did not complete',
      tostring(result.code),
      tostring(result.message)
    )
  end
  if present(result.editId) then
    local status = present(result.status) and tostring(result.status) or 'done'
    return string.format('%s: %s (edit %s)', what, status, tostring(result.editId))
  end
  return what .. ': done'
end

return M
