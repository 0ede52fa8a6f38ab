--- agent_edit.sync_fix: where Neovim's document sync leaves the server's text different from the
--- buffer's: a change that leaves the buffer one empty line (M.install), and a 'fileformat' change
--- (M.resend).
---
--- Why it exists: vim.lsp.sync.compute_diff has a special case for a buffer that became one empty
--- line (neovim/neovim#29904, for `ggdG`): it sends the range from the change's start to the end
--- of the last deleted line, the empty line's break kept. That is right only when every line was
--- deleted. When a line before or after stays and is the empty one (deleting every line but an
--- empty first one, `Gdd` on lines "" and " ", or `dd` on the first of "a" and "") the break
--- between them stays in the server's text: it holds two lines where the buffer has one, and
--- every later change and agent edit is placed on the wrong text, silently.
---
--- The fix: whenever the buffer becomes one empty line, the change is the whole previous text up
--- to the end of its last line, replaced by nothing (what is left is the empty line with the break
--- Neovim's changes count after it). The same diff for every client of the buffer (Neovim computes
--- one per sync kind and encoding), and for Neovim's own correct cases it is the same change.

local M = {}

M.installed = false

--- @param prev_lines string[]
--- @param encoding string
--- @param line_ending string
--- @return integer length of the previous text, its final break left out, in `encoding` units
local function length_of(prev_lines, encoding, line_ending)
  local encoded_length = require('agent_edit.final_newline').encoded_length
  local n = (#prev_lines - 1) * #line_ending
  for _, line in ipairs(prev_lines) do
    n = n + encoded_length(line, encoding)
  end
  return n
end

--- Wraps vim.lsp.sync.compute_diff (looked up by Neovim's change tracking at each change).
function M.install()
  if M.installed then
    return
  end
  local ok, sync = pcall(require, 'vim.lsp.sync')
  if not ok or type(sync.compute_diff) ~= 'function' then
    return
  end
  M.installed = true
  local compute_diff = sync.compute_diff
  sync.compute_diff = function(prev_lines, curr_lines, first, last, new_last, encoding, line_ending)
    if #curr_lines ~= 1 or curr_lines[1] ~= '' or #prev_lines == 0 then
      return compute_diff(prev_lines, curr_lines, first, last, new_last, encoding, line_ending)
    end
    -- Not Neovim's own: its special case also fails (indexes a line before the first) on a
    -- change of an empty buffer that inserts nothing (nvim_buf_set_lines(b, 0, 0, ...) with {}).
    local encoded_length = require('agent_edit.final_newline').encoded_length
    return {
      range = {
        start = { line = 0, character = 0 },
        ['end'] = {
          line = #prev_lines - 1,
          character = encoded_length(prev_lines[#prev_lines], encoding),
        },
      },
      text = '',
      rangeLength = length_of(prev_lines, encoding, line_ending),
    }
  end
end

--- Sends the buffer's whole text again to each agent-edit client, as Neovim does on a reload
--- (its on_reload: didClose, then didOpen), the final newline after it (final_newline.lua). For
--- a 'fileformat' change: every line break of the text changed with it (a save writes them all
--- anew), while Neovim sends no change for it and later changes bring only their own lines' breaks
--- in the new format; the server held the old breaks, or a mix.
--- @param bufnr integer
function M.resend(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  local changetracking = require('vim.lsp._changetracking')
  local uri = vim.uri_from_bufnr(bufnr)
  local name = require('agent_edit').name
  for _, client in ipairs(vim.lsp.get_clients({ name = name, bufnr = bufnr })) do
    if client.initialized and not client:is_stopped() then
      changetracking.reset_buf(client, bufnr) -- sends what is pending first
      client:notify('textDocument/didClose', { textDocument = { uri = uri } })
      client:_text_document_did_open_handler(bufnr)
    end
  end
end

return M
