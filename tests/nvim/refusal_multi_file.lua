--- Scenario: the user types in one of two open files while the agent's two-file patch is on its
--- way. The plugin's handler refuses the whole edit before applying anything, and the agent is
--- told so (CLIENT_REJECTED), not that part of it landed (PARTIAL) or may have (UNVERIFIED).
--- Then Neovim's own apply failing part-way: answered as an error, which the server checks.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('a.txt', 'alpha\nbeta\n')
  H.write_file('b.txt', 'one\ntwo\n')
  H.setup({ save_after_edit = 'never' })
  local ae = require('agent_edit')
  local a = H.open('a.txt')
  local b = H.open('b.txt')
  local patch = '*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n'
    .. '*** Update File: b.txt\n@@\n-one\n+ONE\n*** End Patch\n'
  local apply_edit = require('agent_edit.apply_edit')
  local handler = apply_edit.handler
  apply_edit.handler = function(...)
    apply_edit.handler = handler
    H.type(b, 'GA typed') -- the keystroke Neovim handles just before the applyEdit
    return handler(...)
  end
  data.typed = ae.apply_patch({ patch = patch })
  data.typed_lines = { a = H.lines(a), b = H.lines(b) }
  data.typed_history = ae.history({ format = 'json' })

  -- Neovim's apply changes a.txt, then fails (it answers applied: false for that itself).
  local util = vim.lsp.util
  local apply = util.apply_workspace_edit
  util.apply_workspace_edit = function(edit, encoding)
    util.apply_workspace_edit = apply
    apply({ documentChanges = { edit.documentChanges[1] } }, encoding)
    error('disk full', 0)
  end
  ae.read({ path = 'a.txt' })
  ae.read({ path = 'b.txt' })
  data.failed = ae.apply_patch({ patch = patch:gsub('%-one\n%+ONE', '-two typed\n+TWO') })
  data.failed_lines = { a = H.lines(a), b = H.lines(b) }
end)
