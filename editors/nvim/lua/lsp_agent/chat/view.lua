-- The chat buffer and its window. The buffer holds three regions, top to bottom: the transcript,
-- a status region (an approval question, the queue) and, below a separator line, the prompt the
-- user types. The separator carries an extmark, so edits above it never lose the prompt's place.
local M = {}

M.NAME = "lsp-agent://chat"
M.ns = vim.api.nvim_create_namespace("lsp_agent_chat")

local chat = { buf = nil, sep = nil, status_count = 0 }
M.chat = chat

-- Tool output lines start with this; the fold expression folds them under their tool line.
M.OUTPUT = "  │ "
M.TOOL = "▸ "

-- A tool line starts a fold holding its output lines: content-based, so the folds survive any
-- window showing the buffer and any line added above.
M.FOLDEXPR = [[getline(v:lnum)=~#'^▸ '?'>1':(getline(v:lnum)=~#'^  │ '?'1':'0')]]
M.FOLDTEXT = [[getline(v:foldstart).'  ['.(v:foldend-v:foldstart).' lines]']]

function M.separator_text(keys)
  return string.format("──── prompt · %s send/queue · %s steer ────", keys.send, keys.steer)
end

function M.valid()
  return chat.buf ~= nil and vim.api.nvim_buf_is_valid(chat.buf)
end

-- Local to the window and this buffer (:setlocal): a file shown later in the same window keeps
-- its own folding.
local function set_window_options(win)
  vim.api.nvim_win_call(win, function()
    local o = vim.opt_local
    o.foldmethod, o.foldexpr, o.foldtext = "expr", M.FOLDEXPR, M.FOLDTEXT
    o.foldlevel, o.foldenable, o.wrap, o.linebreak = 0, true, true, true
  end)
end

-- The chat buffer, created on first use (scratch, Markdown, never saved).
function M.buffer(keys)
  if M.valid() then
    return chat.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, M.NAME)
  vim.api.nvim_buf_set_option(buf, "bufhidden", "hide")
  vim.api.nvim_buf_set_option(buf, "swapfile", false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { M.separator_text(keys), "" })
  chat.buf, chat.status_count = buf, 0
  chat.sep = vim.api.nvim_buf_set_extmark(buf, M.ns, 0, 0, {})
  vim.api.nvim_buf_set_option(buf, "filetype", "markdown")
  -- Treesitter highlighting where the markdown parser is installed; the syntax file otherwise.
  if vim.treesitter and vim.treesitter.start then
    pcall(vim.treesitter.start, buf, "markdown")
  end
  -- Any window that shows the chat (also through :buffer) folds its tool output.
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = buf,
    callback = function()
      set_window_options(0)
    end,
  })
  return buf
end

-- 0-based row of the separator line.
function M.separator_row()
  return vim.api.nvim_buf_get_extmark_by_id(chat.buf, M.ns, chat.sep, {})[1]
end

-- 0-based row where the transcript ends (the first status line, or the separator).
function M.transcript_end()
  return M.separator_row() - chat.status_count
end

function M.windows()
  local wins = {}
  if not M.valid() then
    return wins
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == chat.buf then
      table.insert(wins, win)
    end
  end
  return wins
end

function M.is_open()
  return #M.windows() > 0
end


-- Opens a window on the chat (a right split, or a float: options.layout); the cursor goes to the
-- prompt.
function M.open(options)
  local buf = M.buffer(options.keys)
  if options.layout == "float" then
    local width = math.floor(vim.o.columns * 0.7)
    local height = math.floor(vim.o.lines * 0.7)
    vim.api.nvim_open_win(buf, true, { relative = "editor", width = width, height = height, border = "rounded",
      row = math.floor((vim.o.lines - height) / 2), col = math.floor((vim.o.columns - width) / 2) })
  else
    vim.cmd((options.layout == "horizontal" and "botright split") or "botright vsplit")
    vim.api.nvim_win_set_buf(0, buf)
  end
  set_window_options(0)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
end

function M.close()
  for _, win in ipairs(M.windows()) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    end
  end
end

-- Windows whose cursor is on the transcript's last line follow what is added (like `tail -f`);
-- a cursor in the prompt or further up stays where it is.
local function followers()
  local wins = {}
  local last = M.transcript_end()
  for _, win in ipairs(M.windows()) do
    if vim.api.nvim_win_get_cursor(win)[1] == last then
      table.insert(wins, win)
    end
  end
  return wins
end

-- Replaces transcript rows [first, last) (0-based) with `lines`; rows past the transcript's end
-- are added at its end. Returns the first row written.
function M.set_transcript(first, last, lines)
  local stop = M.transcript_end()
  first, last = math.min(first, stop), math.min(last, stop)
  vim.api.nvim_buf_set_lines(chat.buf, first, last, false, lines)
  return first
end

function M.append_transcript(lines)
  local at = M.transcript_end()
  M.set_transcript(at, at, lines)
  return at
end

function M.get_lines(first, last)
  return vim.api.nvim_buf_get_lines(chat.buf, first, last, false)
end

-- The status region between the transcript and the separator, rewritten whole.
function M.set_status(lines)
  local stop = M.separator_row()
  local first = stop - chat.status_count
  vim.api.nvim_buf_set_lines(chat.buf, first, stop, false, lines)
  chat.status_count = #lines
  return first
end

function M.status_first()
  return M.transcript_end()
end

-- The prompt: every line below the separator.
function M.prompt_text()
  local lines = vim.api.nvim_buf_get_lines(chat.buf, M.separator_row() + 1, -1, false)
  return table.concat(lines, "\n")
end

function M.set_prompt(text)
  vim.api.nvim_buf_set_lines(chat.buf, M.separator_row() + 1, -1, false, vim.split(text, "\n", { plain = true }))
end

-- Inserts `text` at the end of the prompt (a space before it when the prompt is not empty).
function M.add_to_prompt(text)
  local current = M.prompt_text()
  M.set_prompt(current:match("^%s*$") and text or (current:gsub("%s+$", "") .. " " .. text))
end

-- Keeps following windows at the bottom after a change; run after every transcript change.
function M.with_follow(change)
  local wins = followers()
  local result = change()
  local last = M.transcript_end()
  for _, win in ipairs(wins) do
    if vim.api.nvim_win_is_valid(win) then
      pcall(vim.api.nvim_win_set_cursor, win, { math.max(last, 1), 0 })
    end
  end
  return result
end

-- Opens the fold at 0-based `row` in every chat window (a failing check is shown expanded).
function M.open_fold(row)
  for _, win in ipairs(M.windows()) do
    vim.api.nvim_win_call(win, function()
      if vim.fn.foldclosed(row + 1) ~= -1 then
        vim.cmd((row + 1) .. "foldopen")
      end
    end)
  end
end

return M
