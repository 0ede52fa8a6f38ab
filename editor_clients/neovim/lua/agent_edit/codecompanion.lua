--- agent_edit.codecompanion: the agent-edit tools as codecompanion.nvim chat tools.
---
--- Owns: turning each entry of agent_edit.tools.specs into a codecompanion tool (its OpenAI
--- function schema, one asynchronous `cmds` function that answers through `output_cb`, and the
--- output handlers that hand the model the whole result or refusal through
--- `chat:add_tool_output`), and registering them, plus an `agent_edit` group, under
--- `interactions.chat.tools` of codecompanion's config. Loaded by the extension
--- (lua/codecompanion/_extensions/agent_edit), so no codecompanion module is required here.
---
--- The interface used, as read in codecompanion.nvim v19.22 (interactions/chat/tools/init.lua,
--- orchestrator.lua, runtime/runner.lua): a `cmds` function is called as
--- `fn(tools, args, {input, output_cb, register_job})` where `tools` is the chat's Tools object
--- (not the tool) and `args` the decoded arguments; `output_cb({status, data})` counts once; then
--- `output.success(tool, stdout, {tools, cmd})` gets this tool's outputs, `output.error(tool,
--- stderr, {tools, cmd})` the errors of the whole run so far (so only the last one is ours).

local tools = require('agent_edit.tools')

local M = {}

M.defaults = {
  --- Short names of the tools to add (all by default).
  tools = { 'read', 'replace', 'apply_patch', 'write', 'history', 'undo' },
  --- codecompanion's own approval prompt before a tool that changes files runs
  --- (`opts.require_approval_before`); true, false, or a function as codecompanion takes it.
  require_approval_before = false,
  --- Name of the group holding all of them (`@{agent_edit}` in a chat), or false for none.
  group = 'agent_edit',
  --- How long a tool call waits for the server (default: agent_edit's timeout_ms).
  timeout_ms = nil,
  --- Options for require("agent_edit").setup(), called if it has not run yet: without it no
  --- buffer is attached, and the server would not see the user's unsaved text.
  setup = nil,
}

M.group_prompt = 'I am giving you ${tools} to read and edit files through my editor: edits are '
  .. 'checked against what my buffers show now (my unsaved changes included), applied all or '
  .. 'nothing, and recorded so I can review and undo them. Read a file before editing it; '
  .. 'after a STALE refusal read it again, because I or another tool changed it.'

--- @param list any
--- @return any the last entry of a list, or the value itself
local function last(list)
  if type(list) == 'table' and getmetatable(list) == nil and list[1] ~= nil then
    return list[#list]
  end
  return list
end

--- A result table from what codecompanion hands an output handler: ours, or a Lua error string
--- caught by its runner.
--- @param out any
--- @return table
local function as_result(out)
  out = last(out)
  if type(out) == 'table' and out.ok ~= nil then
    return out
  end
  return {
    ok = false,
    code = 'CLIENT_ERROR',
    message = 'the tool failed in Neovim: ' .. tostring(out),
    hint = 'Nothing was sent to the server, or its answer was lost; read the file again.',
  }
end

--- @param self table the tool
--- @param meta table {tools, cmd}
--- @param out any
local function report(spec, self, meta, out)
  local result = as_result(out)
  meta.tools.chat:add_tool_output(
    self,
    tools.model_text(result),
    tools.user_text(spec, self.args, result)
  )
end

--- The codecompanion tool for one spec.
--- @param spec table an entry of agent_edit.tools.specs
--- @param opts table? M.defaults merged with the user's options
--- @return table
function M.tool(spec, opts)
  opts = vim.tbl_extend('force', M.defaults, opts or {})
  local name = tools.tool_name(spec)
  return {
    name = name,
    cmds = {
      --- @param _ table codecompanion's Tools object
      --- @param args table the model's arguments, decoded
      --- @param cmd_opts table {input, output_cb, register_job}
      function(_, args, cmd_opts)
        tools.run(spec, args, function(result)
          cmd_opts.output_cb({ status = result.ok == true and 'success' or 'error', data = result })
        end, { timeout_ms = opts.timeout_ms })
        -- Nothing returned: the answer comes through output_cb.
      end,
    },
    schema = {
      type = 'function',
      ['function'] = {
        name = name,
        description = spec.description,
        parameters = vim.deepcopy(spec.parameters),
      },
    },
    output = {
      success = function(self, stdout, meta)
        report(spec, self, meta, stdout)
      end,
      error = function(self, stderr, meta)
        report(spec, self, meta, stderr)
      end,
      prompt = function(self, _)
        return string.format('Run %s %s?', name, tools.target(self.args))
      end,
      cmd_string = function(self, _)
        return vim.trim(name .. ' ' .. tools.target(self.args))
      end,
      rejected = function(self, meta)
        local why = meta.opts and meta.opts.reason
        local text = string.format('The user rejected %s; nothing was changed.', name)
        if type(why) == 'string' and why ~= '' then
          text = text .. ' Their reason: ' .. why
        end
        meta.tools.chat:add_tool_output(self, text)
      end,
      cancelled = function(self, meta)
        meta.tools.chat:add_tool_output(
          self,
          string.format('The user cancelled %s before it ran; nothing was changed.', name)
        )
      end,
    },
  }
end

--- The entries to put under `interactions.chat.tools`: tool name -> tool config.
--- @param opts table?
--- @return table<string, table>
function M.tool_configs(opts)
  opts = vim.tbl_extend('force', M.defaults, opts or {})
  local configs = {}
  for _, short in ipairs(opts.tools) do
    local spec = tools.spec(short)
    if spec == nil then
      error('agent_edit: no tool named ' .. tostring(short), 2)
    end
    configs[tools.tool_name(spec)] = {
      description = spec.description,
      callback = function()
        return M.tool(spec, opts)
      end,
      opts = { require_approval_before = spec.edits and opts.require_approval_before or false },
    }
  end
  return configs
end

--- Adds the tools (and the group) to codecompanion's config table.
--- @param config table require("codecompanion.config")
--- @param opts table? the extension's opts
--- @return string[] names of the tools added
function M.register(config, opts)
  opts = vim.tbl_extend('force', M.defaults, opts or {})
  local ae = require('agent_edit')
  if not ae.is_setup then
    ae.setup(opts.setup)
  end
  -- The tool API used here (cmds with an opts table holding output_cb, output handlers with a
  -- meta table) is codecompanion v19's; v18 had `interactions` but called both differently.
  local root = config.interactions
  if type(root) ~= 'table' or type(root.chat) ~= 'table' then
    error('agent_edit: codecompanion has no interactions.chat config; it needs v19 or newer', 2)
  end
  root.chat.tools = root.chat.tools or {}
  local chat_tools = root.chat.tools
  local names = {}
  for name, cfg in pairs(M.tool_configs(opts)) do
    chat_tools[name] = cfg
    table.insert(names, name)
  end
  table.sort(names)
  if opts.group then
    chat_tools.groups = chat_tools.groups or {}
    chat_tools.groups[opts.group] = {
      description = 'agent-edit: read and edit files through the editor, checked and undoable',
      prompt = M.group_prompt,
      tools = names,
      opts = { collapse_tools = true },
    }
  end
  return names
end

return M
