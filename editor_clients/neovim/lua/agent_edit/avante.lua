--- agent_edit.avante: the agent-edit tools as avante.nvim `custom_tools` entries.
---
--- Owns: turning each entry of agent_edit.tools.specs into avante's tool shape (`param.fields`
--- from the JSON Schema, `returns`, and a `func(input, opts)` that answers through
--- `opts.on_complete(result, err)`): a success reaches the model as the result text, a refusal
--- as the error text (avante marks it is_error), whole in both cases. No avante module is
--- required here.
---
--- The interface used, as read in avante.nvim (lua/avante/llm_tools/init.lua process_tool_use,
--- lua/avante/llm.lua, lua/avante/llm_tools/helpers.lua): `func(input, {session_ctx, on_log,
--- set_store, on_complete, streaming, tool_use_id})`; returning `nil, nil` means "answered later
--- through on_complete"; `helpers.confirm(message, callback(yes, reason), opts, session_ctx,
--- tool_name)` asks the user as avante's own edit tools do. avante also
--- calls tools on partial input while the model is still streaming (`streaming = true`, with an
--- on_complete that discards the answer): an edit must never run on that.

local tools = require('agent_edit.tools')

local M = {}

M.defaults = {
  --- Short names of the tools to return (all by default).
  tools = { 'read', 'replace', 'apply_patch', 'write', 'history', 'undo' },
  --- Ask through avante's own confirmation (avante.llm_tools.helpers.confirm, which follows its
  --- `behaviour.auto_approve_tool_permissions`, auto-approving by default) before a tool that
  --- changes files runs, as avante's built-in edit tools do.
  confirm = true,
  --- How long a tool call waits for the server (default: agent_edit's timeout_ms).
  timeout_ms = nil,
  --- Options for require("agent_edit").setup(), called if it has not run yet.
  setup = nil,
}

--- Property names of a schema in a stable order: the required ones as listed, then the rest
--- sorted (avante's `fields` is a list; the schema's properties are a Lua table).
--- @param schema table
--- @return string[]
local function ordered_names(schema)
  local names, seen = {}, {}
  for _, name in ipairs(schema.required or {}) do
    table.insert(names, name)
    seen[name] = true
  end
  local rest = {}
  for name in pairs(schema.properties or {}) do
    if not seen[name] then
      table.insert(rest, name)
    end
  end
  table.sort(rest)
  vim.list_extend(names, rest)
  return names
end

--- avante's `fields` list for a JSON Schema object.
--- @param schema table
--- @return table[]
function M.fields(schema)
  local required = {}
  for _, name in ipairs(schema.required or {}) do
    required[name] = true
  end
  local fields = {}
  for _, name in ipairs(ordered_names(schema)) do
    local prop = schema.properties[name]
    local field = {
      name = name,
      description = prop.description,
      type = prop.type,
      optional = not required[name],
    }
    if prop.enum then
      field.choices = vim.deepcopy(prop.enum)
    end
    if prop.type == 'object' and prop.properties then
      field.fields = M.fields(prop)
    end
    table.insert(fields, field)
  end
  return fields
end

--- An example input for avante's prompt-based tool calling (its `param.usage`, shown to models
--- without native tool calls): each required field with its description; nil when none is.
--- @param schema table
--- @return table?
local function usage(schema)
  local example = {}
  for _, name in ipairs(schema.required or {}) do
    example[name] = schema.properties[name].description
  end
  return next(example) and example or nil
end

--- The avante tool for one spec.
--- @param spec table an entry of agent_edit.tools.specs
--- @param opts table?
--- @return table
function M.tool(spec, opts)
  opts = vim.tbl_extend('force', M.defaults, opts or {})
  local name = tools.tool_name(spec)
  return {
    name = name,
    description = spec.description,
    param = {
      type = 'table',
      fields = M.fields(spec.parameters),
      usage = usage(spec.parameters),
    },
    returns = {
      {
        name = 'result',
        description = 'The result as JSON (with the diff, or the file text for a read)',
        type = 'string',
      },
      {
        name = 'error',
        description = 'Why it was not done: code, message, hint and details (what was committed)',
        type = 'string',
        optional = true,
      },
    },
    --- @param input table the model's arguments, decoded
    --- @param func_opts table? avante's {on_log, on_complete, streaming, session_ctx, ...}
    func = function(input, func_opts)
      func_opts = func_opts or {}
      if func_opts.streaming then
        -- Partial arguments (oldText cut short, half a patch): never act on them.
        return nil, name .. ' runs on the complete tool call only'
      end
      local on_complete = func_opts.on_complete
      if type(on_complete) ~= 'function' then
        return nil, name .. ' needs avante to pass on_complete (it answers asynchronously)'
      end
      if type(func_opts.on_log) == 'function' then
        pcall(func_opts.on_log, vim.trim('agent-edit ' .. spec.name .. ' ' .. tools.target(input)))
      end
      local function run()
        tools.run(spec, input, function(result)
          if result.ok == true then
            on_complete(tools.model_text(result), nil)
          else
            on_complete(nil, tools.model_text(result))
          end
        end, { timeout_ms = opts.timeout_ms })
      end
      local ok_helpers, helpers = pcall(require, 'avante.llm_tools.helpers')
      if not (spec.edits and opts.confirm and ok_helpers and type(helpers.confirm) == 'function') then
        run()
        return nil, nil
      end
      local question = string.format('Run %s %s?', name, tools.target(input))
      helpers.confirm(question, function(yes, reason)
        if yes then
          run()
        else
          -- avante recognises a refusal by this prefix (is_user_declined).
          local text = string.format('User declined %s; nothing was changed.', name)
          if type(reason) == 'string' and reason ~= '' then
            text = text .. ' Reason: ' .. reason
          end
          on_complete(nil, text)
        end
      end, nil, func_opts.session_ctx, name)
      return nil, nil
    end,
  }
end

--- The list for avante's `custom_tools` (a list, or a function returning one).
--- @param opts table?
--- @return table[]
function M.tools(opts)
  opts = vim.tbl_extend('force', M.defaults, opts or {})
  local ae = require('agent_edit')
  if not ae.is_setup then
    ae.setup(opts.setup)
  end
  local list = {}
  for _, short in ipairs(opts.tools) do
    local spec = tools.spec(short)
    if spec == nil then
      error('agent_edit: no tool named ' .. tostring(short), 2)
    end
    table.insert(list, M.tool(spec, opts))
  end
  return list
end

return M
