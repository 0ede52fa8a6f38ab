--- Scenario: an agent names an absolute path in another repository on the machine (a folder
--- with its own .git, outside the user's workspace). The plugin must not start a server rooted
--- there (that would widen the workspace to whatever the agent names): the call goes to the
--- user's workspace, whose server refuses it.
local H = dofile(vim.env.AGENT_EDIT_HARNESS)
H.run(function(data)
  H.write_file('a.txt', 'alpha\n')
  local other = vim.fs.normalize(H.root .. '/../other')
  vim.fn.mkdir(other .. '/.git', 'p')
  local f = assert(io.open(other .. '/b.txt', 'wb'))
  f:write('secret = 1\n')
  f:close()
  H.setup()
  H.open('a.txt')
  local tools = require('agent_edit.tools')
  local function call(name, args)
    local got
    tools.run(tools.spec(name), args, function(r)
      got = r
    end)
    H.wait(function()
      return got ~= nil
    end, name)
    return got
  end
  data.read = call('read', { path = other .. '/b.txt' })
  data.replace = call(
    'replace',
    { path = other .. '/b.txt', oldText = 'secret = 1', newText = 'secret = 2' }
  )
  data.write = call('write', { path = other .. '/new.txt', text = 'x\n' })
  local f2 = assert(io.open(other .. '/b.txt', 'rb'))
  data.other_disk = f2:read('*a')
  f2:close()
  data.other_new_exists = vim.uv.fs_stat(other .. '/new.txt') ~= nil
  data.roots = {}
  for _, c in ipairs(vim.lsp.get_clients({ name = 'agent_edit' })) do
    table.insert(data.roots, c.root_dir)
  end
end)
