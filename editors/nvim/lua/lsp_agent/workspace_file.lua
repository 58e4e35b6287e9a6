-- Reading a small file the workspace controls, e.g. its .lsp-agent/config.toml: the repository is
-- untrusted, so the file may be a FIFO (an open that never returns), a device, or a symlink to a
-- file elsewhere. Opened without following a final symlink and without blocking, then checked to
-- be a regular file on the descriptor itself (so a swap after a stat cannot fool it), and read up
-- to a bound.
local M = {}

-- Linux's values; libuv passes integer flags to open(2) unchanged.
local O_RDONLY, O_NONBLOCK, O_NOFOLLOW, O_CLOEXEC = 0, 2048, 131072, 524288

M.MAX_BYTES = 65536

-- The file's text (at most MAX_BYTES), or nil and why not.
function M.read(path)
  local fd, open_err = vim.loop.fs_open(path, O_RDONLY + O_NONBLOCK + O_NOFOLLOW + O_CLOEXEC, 0)
  if not fd then
    return nil, tostring(open_err)
  end
  local stat = vim.loop.fs_fstat(fd)
  if not stat or stat.type ~= "file" then
    vim.loop.fs_close(fd)
    return nil, "not a regular file"
  end
  local data, read_err = vim.loop.fs_read(fd, M.MAX_BYTES, 0)
  vim.loop.fs_close(fd)
  if not data then
    return nil, tostring(read_err)
  end
  return data
end

return M
