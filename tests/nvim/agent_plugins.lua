--- Callers of the agent-edit tools shaped exactly as codecompanion.nvim and avante.nvim call them,
--- for the scenario drivers (loaded with dofile). Neither plugin can be installed in CI (they are
--- on no package registry CI reaches), so this reproduces their call sequence from their sources
--- (read, not copied):
---
--- codecompanion.nvim v19.22.0 (interactions/chat/tools/init.lua, orchestrator.lua,
--- runtime/runner.lua, _extensions/init.lua):
---  * the extension is `require("codecompanion._extensions." .. name)`, and `setup(opts)` runs
---    with `extensions.<name>.opts`;
---  * a tool call `{["function"] = {name, arguments = "<json>"}}` is looked up in
---    `config.interactions.chat.tools[name]`, resolved (`callback` function, table, or path),
---    deep-copied, given `name`, `function_call`, `args` (the arguments JSON decoded with
---    vim.json.decode; "" means {}), and `opts` merged with the config entry's opts;
---  * each `cmds` function is called as `fn(tools, args, {input, output_cb, register_job})`,
---    where `tools` is the chat's Tools object; a non-nil return is the answer, else output_cb;
---    only the first answer counts; a Lua error in the call is an error answer (its message);
---  * a success appends `data` to the tool's outputs and calls
---    `output.success(tool, outputs, {tools, cmd = args})`; an error appends `data` to the run's
---    `tools.stderr` (shared by all tools of the run) and calls
---    `output.error(tool, tools.stderr, {tools, cmd = args})`;
---  * output handlers reach the model through `tools.chat:add_tool_output(tool, for_llm,
---    for_user)`.
---
--- avante.nvim (lua/avante/llm_tools/init.lua `process_tool_use`, lua/avante/llm.lua):
---  * `custom_tools` is a list or a function returning one; a tool use `{name, input, id}` finds
---    its tool by name and calls `tool.func(input, {session_ctx, on_log, set_store, on_complete,
---    streaming, tool_use_id})`;
---  * `nil, nil` returned means asynchronous: `on_complete(result, err)` comes later; a result
---    that is not a string is JSON-encoded;
---  * the model then gets a tool_result with `content = err or result`, `is_error = err ~= nil`.
---  * while the model still streams an edit tool's input, avante calls it with `streaming = true`
---    and an on_complete that drops the answer.

local P = {}

--- A fresh codecompanion: the config module the extension writes into, and the extension loaded
--- as codecompanion's `load_extension` does.
--- @param ext_opts table? extensions.agent_edit.opts
--- @return table config the stand-in for require("codecompanion.config")
function P.codecompanion_setup(ext_opts)
  local config = { interactions = { chat = { tools = { groups = {}, opts = {} } } } }
  package.loaded['codecompanion.config'] = config
  local ext = require('codecompanion._extensions.agent_edit')
  assert(type(ext.setup) == 'function', 'the extension has no setup function')
  ext.setup(ext_opts or {})
  return config
end

--- A chat buffer stand-in recording what reaches the model and the user.
--- @return table
function P.codecompanion_chat()
  local chat = { outputs = {} }
  function chat:add_tool_output(tool, for_llm, for_user)
    table.insert(self.outputs, { tool = tool.name, for_llm = for_llm, for_user = for_user })
  end
  return chat
end

--- Runs one tool call the way codecompanion's tool system does, and waits for its output.
--- @param config table from codecompanion_setup
--- @param chat table from codecompanion_chat
--- @param name string tool name
--- @param arguments string|table? the arguments as the adapter hands them (JSON text or table)
--- @param hooks table? {before_cmd = fn(tool)} runs just before the cmds function is called
--- @return table observed {status, output (what add_tool_output got), answers, tool}
function P.codecompanion_call(config, chat, name, arguments, hooks)
  hooks = hooks or {}
  local tools_obj = { chat = chat, stdout = {}, stderr = {}, constants = { STATUS_ERROR = 'error' } }
  local cfg = config.interactions.chat.tools[name]
  assert(cfg, 'no tool ' .. name .. ' in interactions.chat.tools')
  local resolved
  if type(cfg.callback) == 'function' then
    resolved = cfg.callback()
  elseif type(cfg.callback) == 'table' then
    resolved = cfg.callback
  else
    resolved = cfg
  end
  local tool = vim.deepcopy(resolved)
  tool.name = name
  tool.function_call = { ['function'] = { name = name, arguments = arguments } }
  local args = arguments
  if type(args) == 'string' then
    args = vim.json.decode(args == '' and '{}' or args)
  end
  tool.args = args
  tool.opts = vim.tbl_extend('force', tool.opts or {}, cfg.opts or {})
  tools_obj.tool = tool

  local observed = { answers = 0, opts = tool.opts, schema = tool.schema }
  local before = #chat.outputs
  local finished = false
  local tool_output = {}
  local function output_handler(msg)
    observed.answers = observed.answers + 1
    if finished then
      return
    end
    finished = true
    observed.status = msg.status
    if msg.status == 'error' then
      table.insert(tools_obj.stderr, msg.data or 'An error occurred')
      tool.output.error(tool, tools_obj.stderr, { cmd = tool.args, tools = tools_obj })
    else
      if msg.data then
        table.insert(tools_obj.stdout, msg.data)
        table.insert(tool_output, msg.data)
      end
      tool.output.success(
        tool,
        vim.tbl_isempty(tool_output) and nil or tool_output,
        { cmd = tool.args, tools = tools_obj }
      )
    end
  end
  if hooks.before_cmd then
    hooks.before_cmd(tool)
  end
  local ok, ret = pcall(tool.cmds[1], tools_obj, tool.args, {
    input = nil,
    output_cb = output_handler,
    register_job = function() end,
  })
  if not ok then
    output_handler({ status = 'error', data = ret })
  elseif ret ~= nil then
    output_handler(ret)
  end
  if not vim.wait(15000, function()
    return finished
  end, 5) then
    error('codecompanion: ' .. name .. ' never answered through output_cb')
  end
  -- A second answer, if any, would come right after the first.
  vim.wait(20, function()
    return false
  end)
  observed.output = chat.outputs[#chat.outputs]
  observed.outputs_added = #chat.outputs - before
  observed.tools_stderr = #tools_obj.stderr
  return observed
end

--- Stands in for avante.llm_tools.helpers (its `confirm(message, callback, confirm_opts,
--- session_ctx, tool_name)`, whose callback runs scheduled): answers with `answer()`, which
--- returns yes and a reason, and records each question.
--- @param answer fun(): boolean, string?
--- @return table asked list of {message, tool_name}
function P.avante_confirm(answer)
  local asked = {}
  package.loaded['avante.llm_tools.helpers'] = {
    confirm = function(message, callback, _, _, tool_name)
      table.insert(asked, { message = message, tool_name = tool_name })
      local yes, reason = answer()
      vim.schedule(function()
        callback(yes, reason)
      end)
    end,
  }
  return asked
end

--- The tool list avante would use: `custom_tools` as configured (a list or a function).
--- @param custom_tools table|fun(): table
--- @return table[]
function P.avante_tools(custom_tools)
  if type(custom_tools) == 'function' then
    custom_tools = custom_tools()
  end
  return custom_tools
end

--- Runs one tool use the way avante's process_tool_use and its caller do; returns what the model
--- would get back (`content`, `is_error`) and what the tool logged.
--- @param tools table[] from avante_tools
--- @param tool_use table {name, input, id?}
--- @param extra table? extra func opts (`streaming`)
--- @return table observed
function P.avante_call(tools, tool_use, extra)
  extra = extra or {}
  local tool
  for _, t in ipairs(tools) do
    if t.name == tool_use.name then
      tool = t
    end
  end
  assert(tool, 'This tool is not provided: ' .. tostring(tool_use.name))
  local observed = { logs = {}, completions = 0 }
  local done = false
  local function handle_result(result, err)
    local result_str
    if type(result) == 'string' then
      result_str = result
    elseif result ~= nil then
      result_str = vim.json.encode(result)
    end
    return result_str, err
  end
  local function finish(result, err)
    observed.completions = observed.completions + 1
    if done then
      return
    end
    done = true
    observed.content = err ~= nil and err or result
    observed.is_error = err ~= nil
  end
  local streaming = extra.streaming == true
  local result, err = tool.func(tool_use.input, {
    session_ctx = {},
    on_log = function(log)
      table.insert(observed.logs, log)
    end,
    set_store = function() end,
    on_complete = function(r, e)
      if streaming then
        return -- avante's on_complete while streaming drops the answer
      end
      finish(handle_result(r, e))
    end,
    streaming = streaming,
    tool_use_id = tool_use.id or 'toolu_1',
  })
  observed.returned_sync = result ~= nil or err ~= nil
  if result ~= nil or err ~= nil then
    finish(handle_result(result, err))
  end
  if streaming then
    return observed
  end
  if not vim.wait(15000, function()
    return done
  end, 5) then
    error('avante: ' .. tool_use.name .. ' never called on_complete')
  end
  vim.wait(20, function()
    return false
  end)
  return observed
end

return P
