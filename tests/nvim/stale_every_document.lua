--- Scenario: the applyEdit handler checks the version of EVERY TextDocumentEdit, not only the
--- first (Neovim's own checks only the first): a WorkspaceEdit whose second document is stale is
--- refused as a whole and changes neither buffer; a null version is unchecked and applies.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('one.txt', 'one\n')
  H.write_file('two.txt', 'two\n')
  H.setup()
  local b1 = H.open('one.txt')
  local b2 = H.open('two.txt')
  local client = H.wait_attached(b2)
  local util = vim.lsp.util
  local v1, v2 = util.buf_versions[b1], util.buf_versions[b2]
  H.type(b2, 'A (user)')
  local function edit(uri, version, text)
    return {
      textDocument = { uri = uri, version = version },
      edits = {
        {
          range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } },
          newText = text,
        },
      },
    }
  end
  local handler = require('agent_edit.apply_edit').handler
  local ctx = { method = 'workspace/applyEdit', client_id = client.id }
  data.stale_second = handler(nil, {
    edit = { documentChanges = {
      edit(vim.uri_from_bufnr(b1), v1, 'A: '),
      edit(vim.uri_from_bufnr(b2), v2, 'B: '),
    } },
  }, ctx)
  data.after_stale = { one = H.lines(b1), two = H.lines(b2) }
  data.current = handler(nil, {
    edit = { documentChanges = {
      edit(vim.uri_from_bufnr(b1), util.buf_versions[b1], 'A: '),
      edit(vim.uri_from_bufnr(b2), util.buf_versions[b2], 'B: '),
    } },
  }, ctx)
  data.after_current = { one = H.lines(b1), two = H.lines(b2) }
  data.null_version = handler(nil, {
    edit = { documentChanges = { edit(vim.uri_from_bufnr(b2), vim.NIL, 'N: ') } },
  }, ctx)
  data.after_null = { two = H.lines(b2) }
end)
