-- Where the options come from and what they resolve to: the server command (an explicit `cmd`, a
-- configured `python`, or `lsp-agent` on PATH) and the workspace root (root markers).
local M = {}

M.SERVER = "lsp-agent"
M.DEFAULT_MARKERS = { ".git", ".lsp-agent" }

-- The options in force: those given to setup(), else vim.g.lsp_agent (for users who never call
-- setup()), else none.
function M.options(given)
  if given ~= nil then
    return given
  end
  local global = vim.g.lsp_agent
  if type(global) == "table" then
    return global
  end
  return {}
end

local function executable_file(path)
  local stat = vim.loop.fs_stat(path)
  return stat ~= nil and stat.type == "file" and vim.fn.executable(path) == 1
end

-- `name` looked up in the absolute directories of PATH only. An empty or relative entry (".",
-- "bin") means the current directory, usually the repository being opened: a repository that
-- ships its own `lsp-agent` must not be run just because Neovim started inside it.
function M.find_on_path(name, path)
  for dir in string.gmatch(path or vim.env.PATH or "", "[^:]*") do
    if dir:sub(1, 1) == "/" then
      local candidate = dir:gsub("/+$", "") .. "/" .. name
      if executable_file(candidate) then
        return candidate
      end
    end
  end
  return nil
end

-- The command that starts the server: {argv..., "serve"}; nil and the reason when there is none.
-- An explicit `cmd` whose program is a bare name is looked up the same way as the default.
function M.server_command(opts)
  if opts.cmd ~= nil then
    local cmd = vim.deepcopy(opts.cmd)
    if type(cmd) ~= "table" or type(cmd[1]) ~= "string" or cmd[1] == "" then
      return nil, "cmd must be a list of strings, e.g. { \"lsp-agent\", \"serve\" }"
    end
    if not cmd[1]:find("/", 1, true) then
      local found = M.find_on_path(cmd[1])
      if not found then
        return nil, string.format("%s (from cmd) is not on PATH", cmd[1])
      end
      cmd[1] = found
    end
    return cmd, "cmd"
  end
  if opts.python ~= nil then
    if type(opts.python) ~= "string" or not executable_file(vim.fn.expand(opts.python)) then
      return nil, string.format("python = %s is not an executable file", vim.inspect(opts.python))
    end
    return { vim.fn.expand(opts.python), "-m", "lsp_agent", "serve" }, "python"
  end
  local found = M.find_on_path(M.SERVER)
  if not found then
    return nil, M.SERVER .. " is not on PATH (install the lsp-agent package, or pass "
      .. "python = \"/path/to/venv/bin/python\" or cmd = { ... } to setup())"
  end
  return { found, "serve" }, "PATH"
end

-- The command that prints the server's version: the server command up to "serve", then --version
-- (nil for a custom command without "serve").
function M.version_command(cmd)
  local argv = {}
  for _, arg in ipairs(cmd) do
    if arg == "serve" then
      table.insert(argv, "--version")
      return argv
    end
    table.insert(argv, arg)
  end
  return nil
end

-- The nearest directory at or above `start` that holds one of `markers` (nil: none).
function M.find_root(start, markers)
  local dir = vim.fn.fnamemodify(start, ":p"):gsub("/$", "")
  while true do
    for _, marker in ipairs(markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then
        return dir == "" and "/" or dir
      end
    end
    if dir == "" then
      return nil
    end
    dir = dir:match("^(.*)/[^/]*$") or ""
  end
end

-- Where the root search starts: the current file's directory, else the start directory.
function M.search_start()
  local name = vim.api.nvim_buf_get_name(0)
  if name ~= "" and vim.bo.buftype == "" then
    return vim.fn.fnamemodify(name, ":p:h")
  end
  return vim.loop.cwd()
end

return M
