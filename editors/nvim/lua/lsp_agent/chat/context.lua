-- Context named in the prompt, sent as the server's attachments: #buffer (the code buffer the
-- user was in), #selection (the last range given with :AgentChatAdd), #diagnostics (that buffer's)
-- and #file:path (a workspace file, with completion).
local state = require("lsp_agent.state")

local M = {}

local MAX_FILES_SCANNED = 5000
local MAX_COMPLETIONS = 200
local SKIP_DIRS = { [".git"] = true, node_modules = true, [".venv"] = true, __pycache__ = true }

local selection = nil -- { name, text } from the last :AgentChatAdd
M.code_buf = nil      -- the last file buffer the user was in (what #buffer means)

local function relative(name)
  local root = state.root
  if root and name:sub(1, #root + 1) == root .. "/" then
    return name:sub(#root + 2)
  end
  return vim.fn.fnamemodify(name, ":.")
end

-- Remembers the code buffer a window entered, so #buffer still means it once the chat has focus.
function M.track(buf)
  if vim.api.nvim_buf_get_option(buf, "buftype") == "" and vim.api.nvim_buf_get_name(buf) ~= "" then
    M.code_buf = buf
  end
end

-- Lines `first`..`last` (1-based) of `buf` become the #selection.
function M.set_selection(buf, first, last)
  local lines = vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
  selection = { name = string.format("selection %s:%d-%d", relative(vim.api.nvim_buf_get_name(buf)), first, last),
                text = table.concat(lines, "\n") }
end

local function buffer_attachment()
  local buf = M.code_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return nil, "#buffer: no file buffer to attach (open a file, then the chat)"
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return { type = "text", name = "buffer " .. relative(vim.api.nvim_buf_get_name(buf)),
           text = table.concat(lines, "\n") }
end

local SEVERITY = { "error", "warning", "info", "hint" }

local function diagnostics_attachment()
  local buf = M.code_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return nil, "#diagnostics: no file buffer (open a file, then the chat)"
  end
  local name = relative(vim.api.nvim_buf_get_name(buf))
  local lines = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(lines, string.format("%s:%d:%d: %s: %s", name, d.lnum + 1, d.col + 1,
      SEVERITY[d.severity] or "note", d.message))
  end
  if #lines == 0 then
    table.insert(lines, "(no diagnostics)")
  end
  return { type = "text", name = "diagnostics " .. name, text = table.concat(lines, "\n") }
end

local function file_attachment(path)
  local full = path:sub(1, 1) == "/" and path or ((state.root or vim.loop.cwd()) .. "/" .. path)
  local stat = vim.loop.fs_stat(full)
  if not stat or stat.type ~= "file" then
    return nil, "#file:" .. path .. ": no such file in the workspace (complete the path with <C-x><C-o>)"
  end
  return { type = "file", path = path }
end

-- The attachments the prompt names, in the order named (each once); nil and the reason when one
-- cannot be made, so the prompt is kept for the user to fix.
function M.attachments(prompt)
  local found, seen = {}, {}
  for word, colon, rest in prompt:gmatch("#([%w_]+)(:?)(%S*)") do
    local token = word == "file" and colon == ":" and ("#file:" .. rest) or ("#" .. word)
    if not seen[token] then
      seen[token] = true
      local attachment, why
      if token == "#buffer" then
        attachment, why = buffer_attachment()
      elseif token == "#selection" then
        attachment = selection and { type = "text", name = selection.name, text = selection.text }
        why = "#selection: nothing selected yet (select lines, then :AgentChatAdd)"
      elseif token == "#diagnostics" then
        attachment, why = diagnostics_attachment()
      elseif word == "file" and rest ~= "" then
        attachment, why = file_attachment(rest)
      else
        attachment, why = false, nil -- a hashtag that is not context: plain text
      end
      if attachment == nil then
        return nil, why
      end
      if attachment then
        table.insert(found, attachment)
      end
    end
  end
  return found
end

-- Workspace files whose path starts with `prefix`, for #file: completion (a bounded walk).
function M.files(prefix)
  local root = state.root or vim.loop.cwd()
  local matches, scanned, dirs = {}, 0, { "" }
  while #dirs > 0 and scanned < MAX_FILES_SCANNED and #matches < MAX_COMPLETIONS do
    local dir = table.remove(dirs, 1)
    local handle = vim.loop.fs_scandir(root .. (dir == "" and "" or ("/" .. dir)))
    while handle do
      local name, kind = vim.loop.fs_scandir_next(handle)
      if not name then
        break
      end
      scanned = scanned + 1
      local path = dir == "" and name or (dir .. "/" .. name)
      if kind == "directory" and not SKIP_DIRS[name] then
        table.insert(dirs, path)
      elseif kind == "file" and path:sub(1, #prefix) == prefix then
        table.insert(matches, path)
      end
    end
  end
  table.sort(matches)
  return matches
end

-- 'omnifunc' of the chat buffer: completes the path after #file: (and the context words after #).
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local start = line:find("#file:[^%s]*$")
    if start then
      return start + 5
    end
    start = line:find("#[%w_]*$")
    return start and (start - 1) or -3
  end
  local line = vim.api.nvim_get_current_line()
  if line:find("#file:", 1, true) and not base:find("^#") then
    return M.files(base)
  end
  local words = {}
  for _, word in ipairs({ "#buffer", "#selection", "#diagnostics", "#file:" }) do
    if word:sub(1, #base) == base then
      table.insert(words, word)
    end
  end
  return words
end

return M
