-- The user commands. Defining them loads nothing else: each one requires the plugin when used, and
-- starts the server first if needed (so they work without setup()).
local M = {}

local function agent()
  return require("lsp_agent")
end

-- name -> { what it does, its nargs, whether it needs the server }
M.COMMANDS = {
  AgentRun = { function(c) agent().run(c.args) end, "+", true },
  AgentSteer = { function(c) agent().steer(c.args) end, "+", true },
  AgentSteerNow = { function() agent().steer_now() end, 0, true },
  AgentQueue = { function() agent().show_queue() end, 0, true },
  AgentCancel = { function() agent().cancel() end, 0, true },
  AgentEvents = { function() agent().show_events() end, 0, false },
  AgentMcp = { function() agent().show_mcp() end, 0, true },
  AgentNew = { function() agent().new_session() end, 0, false },
  LspAgentTrust = { function(c) agent().trust_command(c.args) end, "?", true },
}

-- Reviewing a run's changes (lua/lsp_agent/review.lua): kept apart from the commands above.
M.COMMANDS.AgentReview = { function(c) require("lsp_agent.review").review(c.args) end, "?", false }

-- Taking a session back to before a message or step (lua/lsp_agent/rewind.lua).
M.COMMANDS.AgentRewind = { function(c) require("lsp_agent.rewind").command(c.args) end, "?", true }

-- The chat buffer (lua/lsp_agent/chat/): it opens at once and starts the server in the background.
M.CHAT_COMMANDS = {
  AgentChat = { function() require("lsp_agent.chat").toggle() end, { nargs = 0 } },
  AgentChatAdd = { function(c) require("lsp_agent.chat").add_selection(c.line1, c.line2) end, { range = true } },
}

local COMPLETE = {
  LspAgentTrust = function()
    return { "show", "trust", "revoke" }
  end,
  AgentRewind = function()
    return { "undo" }
  end,
  AgentReview = function()
    local run = require("lsp_agent.review_track").latest()
    return run and vim.deepcopy(run.paths) or {}
  end,
}

function M.define()
  for name, spec in pairs(M.COMMANDS) do
    local run, nargs, needs_server = spec[1], spec[2], spec[3]
    vim.api.nvim_create_user_command(name, function(c)
      if needs_server then
        agent().when_started(function()
          run(c)
        end, ":" .. name .. (c.args ~= "" and (" " .. c.args) or ""))
      else
        run(c)
      end
    end, { nargs = nargs, complete = COMPLETE[name], desc = "lsp-agent" })
  end
  for name, spec in pairs(M.CHAT_COMMANDS) do
    vim.api.nvim_create_user_command(name, spec[1], vim.tbl_extend("force", spec[2], { desc = "lsp-agent chat" }))
  end
end

return M
