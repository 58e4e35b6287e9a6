-- Workspace trust: the server ignores the workspace's own settings that would start programs, pick
-- endpoints or keys, widen allow-lists or lift limits until the user trusts exactly those files
-- (agent/workspaceTrust, agent/workspaceTrustChanged, :LspAgentTrust).
local client = require("lsp_agent.client")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")

local one_line, value = text.one_line, text.value

local M = { handlers = {} }

local YES, NO = "Trust and apply", "Not now"

local function ignoring(trust_state)
  return trust_state ~= nil and (trust_state.state == "untrusted" or trust_state.state == "changed")
    and #(trust_state.gated or {}) > 0
end

-- The effects of the ignored settings, one per line, in the server's order.
function M.lines(trust_state)
  local lines = {}
  local what = {
    trusted = "trusted: its configuration applies",
    untrusted = "not trusted: its own configuration is ignored",
    changed = "changed since you trusted it: its configuration is ignored until you trust it again",
    nothing_to_trust = "nothing in it needs trust",
  }
  table.insert(lines, "workspace " .. one_line(trust_state.root) .. " is "
    .. (what[trust_state.state] or tostring(trust_state.state)))
  for _, g in ipairs(trust_state.gated or {}) do
    table.insert(lines, "  - " .. one_line(g.effect))
  end
  return lines
end

local trust_request

-- Ask with vim.ui.select; "Trust and apply" trusts exactly the hash that was shown.
local function ask(trust_state)
  local hash = value(trust_state.hash)
  if not hash then
    return
  end
  state.trust_asked[hash] = true
  local prompt = trust_state.state == "changed"
    and "lsp-agent: this workspace's own configuration changed since you trusted it. It would:"
    or "lsp-agent: this workspace's own configuration would:"
  for _, g in ipairs(trust_state.gated or {}) do
    prompt = prompt .. "\n  - " .. one_line(g.effect)
  end
  prompt = prompt .. "\n(from " .. one_line(table.concat(trust_state.files or {}, ", ")) .. "; ignored until you trust it)"
  vim.ui.select({ YES, NO }, { prompt = prompt, kind = "lsp_agent_trust" }, function(choice)
    if choice == YES then
      trust_request("trust", hash)
    else
      client.notify("the workspace configuration stays ignored (:LspAgentTrust trust to trust it)")
    end
  end)
end

-- One agent/workspaceTrust request; the answer is the new state. A trust refused because the files
-- changed since they were shown shows them again.
trust_request = function(action, hash, on_state)
  local c = client.get()
  if not c then
    return
  end
  client.request(c, "agent/workspaceTrust", { action = action, hash = hash }, function(err, trust_state)
    if err then
      local data = value(err.data)
      if action == "trust" and type(data) == "table" and data.kind == "trust_changed" then
        client.notify("the workspace configuration changed since it was shown; here it is again", vim.log.levels.WARN)
        trust_request("show", nil, function(fresh)
          if ignoring(fresh) then
            ask(fresh)
          end
        end)
        return
      end
      client.on_reply("agent/workspaceTrust " .. action)(err)
      return
    end
    state.trust = trust_state
    if action == "trust" then
      client.notify("workspace configuration trusted and applied")
    elseif action == "revoke" then
      client.notify("workspace trust revoked; its configuration is ignored again")
    end
    if on_state then
      on_state(trust_state)
    end
  end)
end

-- The server ignores the workspace's gated settings: ask once per hash (the agent works meanwhile;
-- the server never waits for this answer).
M.handlers["agent/workspaceTrustChanged"] = function(_, params, _)
  state.trust = params
  local hash = value(params.hash)
  if not ignoring(params) or not hash or state.trust_asked[hash] then
    return
  end
  state.trust_asked[hash] = true
  vim.schedule(function()
    ask(params)
  end)
end

-- :LspAgentTrust [show|trust|revoke]
function M.command(action)
  action = (action == nil or action == "") and "show" or action
  if action == "show" then
    trust_request("show", nil, function(trust_state)
      client.notify(table.concat(M.lines(trust_state), "\n"))
    end)
  elseif action == "trust" then
    trust_request("show", nil, function(trust_state)
      if ignoring(trust_state) then
        ask(trust_state)
      else
        client.notify(table.concat(M.lines(trust_state), "\n"))
      end
    end)
  elseif action == "revoke" then
    trust_request("revoke")
  else
    client.notify("usage: :LspAgentTrust [show|trust|revoke]", vim.log.levels.ERROR)
  end
end

return M
