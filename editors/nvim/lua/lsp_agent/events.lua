-- The scratch buffer lsp-agent://events: the prompt and steps of every run as they stream
-- (agent/event), the server's progress messages, and a notification for a run that ended badly.
local client = require("lsp_agent.client")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")
local ui = require("lsp_agent.ui")

local first_line, value = text.first_line, text.value

local M = { handlers = {} }

function M.buffer()
  state.events_buf = ui.scratch(state.events_buf, "lsp-agent://events")
  return state.events_buf
end

-- Windows showing the events buffer whose cursor is on its last line follow what is appended
-- (like `tail -f`); a cursor moved up stays where it is.
local function followers(buf)
  local last = vim.api.nvim_buf_line_count(buf)
  local wins = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf and vim.api.nvim_win_get_cursor(win)[1] >= last then
      table.insert(wins, win)
    end
  end
  return wins
end

local function follow(wins, buf)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(wins) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

-- Inserts `line_text` before line `at` (0-based; nil: at the end); returns the line it landed on.
function M.append(line_text, at)
  local buf = M.buffer()
  local lines = vim.split(line_text, "\n", { plain = true })
  local wins = followers(buf)
  local count = vim.api.nvim_buf_line_count(buf)
  local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
  local index
  if count == 1 and first == "" then
    index = 0
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, lines)
  elseif at ~= nil and at < count then
    index = at
    vim.api.nvim_buf_set_lines(buf, at, at, false, lines)
    for generation, line in pairs(state.gen_line) do -- the later generations' lines moved down
      if line >= at then
        state.gen_line[generation] = line + #lines
      end
    end
  else
    index = count
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
  end
  follow(wins, buf)
  return index
end

-- The prompt line (`== text`) of a generation: before its first event line when the events came
-- first (a reply can arrive after the generation's first events), else at the end.
function M.announce(generation, prompt)
  if generation == nil or state.announced[generation] then
    return
  end
  state.announced[generation] = true
  require("lsp_agent.bus").emit("announce", { generation = generation, prompt = prompt })
  for i, waiting in ipairs(state.next_prompts) do
    if waiting == prompt then -- the reply that started it came first: not the next one's prompt
      table.remove(state.next_prompts, i)
      break
    end
  end
  local at = state.gen_line[generation]
  local line = M.append("== " .. prompt, at)
  if at == nil then
    state.gen_line[generation] = line
  end
end

local function describe(event)
  local t = event.type
  if t == "step_start" then
    return string.format("-- step %d/%d", event.step, event.maxSteps)
  elseif t == "text" then
    return event.part.text
  elseif t == "reasoning" then
    return "(thinking) " .. first_line(event.part.text)
  elseif t == "tool_start" then
    return "  > " .. event.part.tool .. " " .. first_line(vim.json.encode(event.part.state.input))
  elseif t == "tool_use" then
    return "    " .. first_line(event.part.state.output)
  elseif t == "notice" then
    return "  ! " .. event.message
  elseif t == "error" then
    return "  x " .. event.error.message
  elseif t == "run_finish" then
    local files = event.filesChanged or {}
    return string.format("-- stop: %s · verification: %s · steps %d%s", event.stopReason, event.verification,
      event.steps, #files > 0 and (" · files changed: " .. table.concat(files, ", ")) or "")
  end
  return nil -- text/reasoning deltas: the full text follows in one piece
end

-- A run that did not end well is shown even when lsp-agent://events is not open.
local function report_finish(event, generation)
  local err = value(event.error)
  local message = (err and err.message) or state.run_error[generation]
  state.run_error[generation] = nil
  if event.stopReason == "error" then
    client.notify("run failed: " .. (message or "unknown error"), vim.log.levels.ERROR)
  elseif event.stopReason == "step_limit" or event.stopReason == "loop" then
    client.notify(string.format("run stopped (%s) after %d steps · verification: %s", event.stopReason, event.steps,
      event.verification), vim.log.levels.WARN)
  elseif event.verification == "failed" then
    client.notify("run ended, but its checks failed (verification: failed)", vim.log.levels.WARN)
  end
end

M.handlers["agent/event"] = function(_, params, _)
  local event = params.event
  require("lsp_agent.runstate").observe(params)
  require("lsp_agent.review_track").observe(params)
  if event.type == "run_finish" then
    state.last_finish = event
    state.stopped[params.generation] = event.stopReason
    if state.generation == params.generation then
      state.generation = nil
    end
    report_finish(event, params.generation)
  elseif params.sessionID == state.session_id then
    state.generation = params.generation -- also generations a queued follow-up started
  end
  if event.type == "error" then
    state.run_error[params.generation] = event.error.message
  end
  -- A waiting follow-up the server started when the previous generation ended: its prompt line.
  if params.sessionID == state.session_id and not state.announced[params.generation]
      and state.gen_line[params.generation] == nil and #state.next_prompts > 0 then
    M.announce(params.generation, table.remove(state.next_prompts, 1))
  end
  local line = describe(event)
  if line then
    local at = M.append(line)
    if state.gen_line[params.generation] == nil then
      state.gen_line[params.generation] = at
    end
  end
end

-- $/progress: Neovim 0.7 keeps the messages without showing them; echo "lsp-agent: step k of N · tool".
local function echo_progress(params)
  local v = params.value or {}
  local message = v.message or v.title
  if type(message) == "string" and message ~= "" then
    vim.api.nvim_echo({ { "lsp-agent: " .. message } }, false, {})
  end
end

M.handlers["$/progress"] = function(err, params, ctx, config)
  local default = vim.lsp.handlers["$/progress"]
  local result = default and default(err, params, ctx, config)
  if params and state.show_progress then
    pcall(echo_progress, params)
  end
  return result
end

-- Focus the window already showing the events, else open one at the bottom; the cursor goes to
-- the last line, so the window follows new lines.
function M.show()
  local buf = M.buffer()
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
  end
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
end

return M
