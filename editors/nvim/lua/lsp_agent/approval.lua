-- The approval policy's questions (agent/requestApproval), put to the user with vim.ui.select.
local events = require("lsp_agent.events")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")

local M = { handlers = {} }

local LABELS = { allow_once = "Allow once", allow_session = "Allow for this session", deny = "Deny" }

-- The server asks before a call its approval policy names (a command under "untrusted", one that
-- would run without a sandbox, an MCP tool that may change things). vim.ui.select may answer later
-- (UI plugins); vim.wait keeps the event loop running until it does. No choice means deny, and so
-- does the server's own timeout (approvalTimeoutS).
M.handlers["agent/requestApproval"] = function(_, params, _)
  local decision = nil
  local options = params.options or { "allow_once", "allow_session", "deny" }
  events.append("?? approval asked: " .. params.tool .. ": " .. text.first_line(params.what))
  local prompt = "lsp-agent asks to approve " .. params.tool .. ": " .. params.what .. " (why: " .. params.why .. ")"
  -- "for this session" says what it covers: the server's sessionScope (absent from older servers)
  local scope = text.value(params.sessionScope)
  -- An open chat asks in its own buffer; otherwise (or with no answer there) vim.ui.select does.
  local chat = package.loaded["lsp_agent.chat"]
  if chat and chat.is_open() then
    return { decision = chat.ask_approval(params, options) or "deny" }
  end
  vim.ui.select(options, {
    prompt = prompt,
    kind = "lsp_agent_approval",
    format_item = function(item)
      if item == "allow_session" and type(scope) == "string" and scope ~= "" then
        return LABELS.allow_session .. ": " .. text.one_line(scope)
      end
      return LABELS[item] or item
    end,
  }, function(choice)
    decision = choice or "deny"
  end)
  vim.wait(state.approval_wait_ms, function()
    return decision ~= nil
  end, 20)
  return { decision = decision or "deny" }
end

return M
