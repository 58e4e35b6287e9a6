-- The run's state for statuslines: `User LspAgentRunStart` / `User LspAgentRunStop` autocommands
-- (with `data` on 0.8+), the same table in require("lsp_agent").run_state and vim.g.lsp_agent_run
-- (0.7 has no autocommand data), and statusline(), a short text such as "agent: running step 3/50".
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")

local M = { handlers = {} }

-- 0.7's nvim_exec_autocmds refuses the `data` key; 0.8 added it.
local HAS_DATA = vim.fn.has("nvim-0.8") == 1

local function publish(pattern, data)
  vim.g.lsp_agent_run = data
  local opts = { pattern = pattern, modeline = false }
  if HAS_DATA then
    opts.data = data
  end
  -- A statusline plugin's error must not break the handler that receives the server's events.
  pcall(vim.api.nvim_exec_autocmds, "User", opts)
end

local function snapshot()
  local r = state.run_state
  return { running = r.running, sessionID = r.sessionID, generation = r.generation, step = r.step,
           maxSteps = r.maxSteps, stopReason = r.stopReason, verification = r.verification }
end

-- Called for every agent/event, before the plugin's other bookkeeping.
function M.observe(params)
  local event = params.event
  local r = state.run_state
  if event.type == "run_finish" then
    r.running, r.sessionID, r.generation = false, params.sessionID, params.generation
    r.stopReason, r.verification, r.step = event.stopReason, event.verification, event.steps
    publish("LspAgentRunStop", snapshot())
    return
  end
  if not r.running or r.generation ~= params.generation then
    r.running, r.sessionID, r.generation = true, params.sessionID, params.generation
    r.step, r.maxSteps, r.stopReason = 0, nil, nil
    publish("LspAgentRunStart", snapshot())
  end
  if event.type == "step_start" then
    r.step, r.maxSteps = event.step, event.maxSteps
    vim.g.lsp_agent_run = snapshot()
  end
end

-- An idle session's check went stale (a revert, a hand edit): the statusline stops saying verified.
M.handlers["agent/verificationChanged"] = function(_, params, _)
  local r = state.run_state
  if params.sessionID == r.sessionID and not r.running then
    r.verification = params.verification
    vim.g.lsp_agent_run = snapshot()
  end
end

local WORDS = { verified = "verified", failed = "checks failed", not_run = "not verified" }

-- "agent: running step 3/50", "agent: verified", "agent: stopped (step_limit) · not verified", or
-- "" before the first run (nothing to show).
function M.statusline()
  local r = state.run_state
  if r.running then
    if r.step and r.step > 0 and r.maxSteps then
      return string.format("agent: running step %d/%d", r.step, r.maxSteps)
    end
    return "agent: running"
  end
  if r.generation == nil then
    return ""
  end
  local verification = WORDS[r.verification] or text.one_line(r.verification)
  if r.stopReason and r.stopReason ~= "final" then
    return string.format("agent: stopped (%s) · %s", text.one_line(r.stopReason), verification)
  end
  return "agent: " .. verification
end

return M
