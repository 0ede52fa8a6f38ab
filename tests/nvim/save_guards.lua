--- Scenario: the save after an agent edit (agentEdit/saveDocuments) writes only what the agent's
--- edit made of a clean buffer. Not a file another program changed on disk since Neovim read it
--- (`write!` would overwrite that change), and not a buffer the user typed into between the edit
--- and the save request (their keystroke would be persisted behind their back), nor a buffer
--- the user made 'readonly' (write! would override it).
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('clean.txt', 'one\ntwo\n')
  H.write_file('external.txt', 'one\ntwo\n')
  H.write_file('typed.txt', 'one\ntwo\n')
  H.write_file('viewed.txt', 'one\ntwo\n')
  H.setup()
  local ae = require('agent_edit')

  -- Control: a clean buffer is saved after the edit.
  H.open('clean.txt')
  data.clean = ae.replace({ path = 'clean.txt', oldText = 'two', newText = 'TWO' })
  data.clean_disk = H.read_file('clean.txt')

  -- Another program rewrites the file under a clean buffer (a checkout, another editor).
  local ext = H.open('external.txt')
  H.write_file('external.txt', 'one\ntwo\nwritten by another program\n')
  data.external = ae.replace({ path = 'external.txt', oldText = 'one', newText = 'ONE' })
  data.external_lines = H.lines(ext)
  data.external_disk = H.read_file('external.txt')

  -- A file the user opened read-only (:view): the edit lands in the buffer, the file stays.
  local viewed = H.open('viewed.txt')
  vim.bo[viewed].readonly = true
  data.viewed = ae.replace({ path = 'viewed.txt', oldText = 'one', newText = 'ONE' })
  data.viewed_lines = H.lines(viewed)
  data.viewed_disk = H.read_file('viewed.txt')

  -- The user types after the edit landed, before the save request is handled.
  local typed = H.open('typed.txt')
  local apply_edit = require('agent_edit.apply_edit')
  local save = apply_edit.save_documents
  apply_edit.save_documents = function(...)
    apply_edit.save_documents = save
    H.type(typed, 'Go# typed by the user')
    return save(...)
  end
  data.typed = ae.replace({ path = 'typed.txt', oldText = 'one', newText = 'ONE' })
  data.typed_lines = H.lines(typed)
  data.typed_modified = vim.bo[typed].modified
  data.typed_disk = H.read_file('typed.txt')
end)
