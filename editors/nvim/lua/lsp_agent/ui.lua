-- The plugin's scratch buffers (lsp-agent://events, queue, mcp) and the window that shows one.
local M = {}

-- The buffer `buf` if still valid, else a new scratch buffer called `name`.
function M.scratch(buf, name)
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  return buf
end

-- Shows `buf` in a new window at the bottom unless a window shows it already.
function M.show_at_bottom(buf)
  if vim.fn.bufwinnr(buf) == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
  end
end

return M
