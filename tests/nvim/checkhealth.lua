--- Scenario: :checkhealth agent_edit reports the Neovim version, the server command and the
--- running server's version.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.setup()
  vim.cmd('checkhealth agent_edit')
  data.health = H.lines(vim.api.nvim_get_current_buf())
  local v = vim.version()
  data.nvim = string.format('%d.%d.%d', v.major, v.minor, v.patch)
end)
