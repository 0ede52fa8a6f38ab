--- codecompanion.nvim extension `agent_edit`: loaded by codecompanion from the runtimepath when
--- its setup has `extensions = { agent_edit = { opts = {...} } }`. It adds the agent-edit chat
--- tools (agent_edit_read, _replace, _apply_patch, _write, _history, _undo) and the `agent_edit`
--- group to codecompanion's `interactions.chat.tools`; see agent_edit.codecompanion and
--- :help agent_edit-codecompanion.

local Extension = {}

--- @param opts table? see require("agent_edit.codecompanion").defaults
function Extension.setup(opts)
  require('agent_edit.codecompanion').register(require('codecompanion.config'), opts)
end

Extension.exports = {
  --- The tool specs (names, descriptions, argument schemas) the tools were made from.
  specs = function()
    return require('agent_edit.tools').specs
  end,
}

return Extension
