-- An approval question answered in the chat: the block shows the exact command and the choices;
-- a number or j/k moves to a choice and <CR> confirms it (a digit typed by accident approves
-- nothing, and keys typed before the question appeared are dropped). The server's request waits for the answer, and Neovim does not run mappings while a
-- handler waits, so the keys are read here, one at a time.
local state = require("lsp_agent.state")
local status = require("lsp_agent.chat.status")
local view = require("lsp_agent.chat.view")

local M = {}

local CR, J, K = 13, string.byte("j"), string.byte("k")

local function chat_window()
  local wins = view.windows()
  local current = vim.api.nvim_get_current_win()
  for _, win in ipairs(wins) do
    if win == current then
      return win
    end
  end
  return wins[1]
end

-- Asks in the chat; returns the decision, or nil when none came in time (the caller denies).
function M.ask(params, options, keys)
  status.show_approval(params, options, keys)
  local win = chat_window()
  vim.api.nvim_set_current_win(win)
  if vim.fn.mode() ~= "n" then
    vim.cmd("stopinsert")
  end
  local function go(row)
    -- the rows are read again each time: a queue change re-renders the region above them
    local first, last = status.approval_choice_rows()
    row = math.max(first, math.min(last, row))
    vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
    vim.cmd("redraw")
  end
  go((status.approval_choice_rows()))
  -- Keys typed before the question appeared were meant for something else: none of them answers it.
  while vim.fn.getchar(0) ~= 0 do
  end
  local decision = nil
  vim.wait(state.approval_wait_ms, function()
    local ok, key = pcall(vim.fn.getchar, 0)
    if not ok or key == 0 then
      return false
    end
    local row = vim.api.nvim_win_get_cursor(win)[1] - 1
    if type(key) == "number" and key >= 49 and key <= 48 + #options then
      go(status.approval_choice_rows() + key - 49)
    elseif key == J then
      go(row + 1)
    elseif key == K then
      go(row - 1)
    elseif key == CR then
      decision = status.choice_at(row)
    end
    return decision ~= nil
  end, 20)
  status.clear_approval(keys)
  return decision
end

return M
