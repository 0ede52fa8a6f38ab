--- Scenario: the agent-edit tool specs as each plugin receives them: the one spec table, the
--- schemas the codecompanion extension registers, and avante's custom_tools fields (for the
--- drift test against the server's argument schemas). No server needed.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
local P = dofile(vim.fs.dirname(vim.env.AGENT_EDIT_HARNESS) .. '/agent_plugins.lua')
H.run(function(data)
  -- The extension calls agent_edit.setup() when the user did not; it attaches no buffer here.
  local specs = require('agent_edit.tools').specs
  data.specs = {}
  for _, spec in ipairs(specs) do
    table.insert(data.specs, {
      name = spec.name,
      command = spec.command,
      edits = spec.edits,
      description = spec.description,
      parameters = spec.parameters,
    })
  end
  local config = P.codecompanion_setup({})
  data.setup_ran = require('agent_edit').is_setup
  data.codecompanion = {}
  for name, cfg in pairs(config.interactions.chat.tools) do
    if name ~= 'groups' and name ~= 'opts' then
      local tool = cfg.callback()
      data.codecompanion[name] = {
        schema = tool.schema,
        description = cfg.description,
        tool_name = tool.name,
        cmds = #tool.cmds,
        outputs = vim.tbl_keys(tool.output),
      }
    end
  end
  data.group = config.interactions.chat.tools.groups.agent_edit
  data.avante = {}
  for _, t in ipairs(require('agent_edit.avante').tools()) do
    data.avante[t.name] = { description = t.description, param = t.param, returns = t.returns }
  end
end)
