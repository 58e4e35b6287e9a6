-- Corrections to the running generation (agent/steering, agent/steer), their receipts
-- (agent/receipt), and the steer gesture for the queue (agent/steerPrefix).
local client = require("lsp_agent.client")
local events = require("lsp_agent.events")
local queue = require("lsp_agent.queue")
local run = require("lsp_agent.run")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")

local first_line, value = text.first_line, text.value

local M = { handlers = {} }

local steer_seq = 0

local function next_client_id()
  steer_seq = steer_seq + 1
  return string.format("nvim-%d-%d-%d", vim.loop.os_getpid(), os.time(), steer_seq)
end

-- Reasons for which a correction's text is queued instead (nothing typed is lost): the generation
-- ended or another started before the correction could land (also after it had been accepted).
local REQUEUE = { generation_not_active = true, stale_generation = true,
                  generation_ended_before_application = true }

-- The end of one :AgentSteer correction, from the agent/steer answer or a later agent/receipt
-- (whichever comes first; the text is handled once).
local function settle(receipt)
  local correction = state.corrections[receipt.clientID]
  if correction == nil or receipt.status == "accepted" then
    return
  end
  state.corrections[receipt.clientID] = nil
  if receipt.status ~= "rejected" then
    return
  end
  local reason = value(receipt.reason)
  local stopped = state.stopped[value(receipt.generation)]
  if REQUEUE[reason] and (stopped == "cancelled" or stopped == "error") then
    -- Not started by itself after an interrupt (the server pauses steered rows the same way).
    client.notify(string.format("correction not applied, the run ended (%s): %s", stopped, correction),
      vim.log.levels.WARN)
  elseif REQUEUE[reason] then
    queue.add(correction)
  else
    client.notify("correction rejected: " .. tostring(reason), vim.log.levels.WARN)
  end
end

M.handlers["agent/receipt"] = function(_, params, _)
  local receipt = params.receipt
  state.receipts[receipt.clientID] = receipt
  local reason = value(receipt.reason)
  events.append("~~ correction " .. receipt.status .. (reason and (" (" .. reason .. ")") or ""))
  settle(receipt)
end

-- Steer the running generation; when none runs, queue the text instead (which starts it).
-- `on_error(err)`, if given, is called when a request fails (the chat puts the text back).
function M.steer(correction, on_error)
  local c = client.get()
  if not c then
    return
  end
  if not state.session_id then
    run.run(correction)
    return
  end
  client.request(c, "agent/steering", { sessionID = state.session_id }, function(err, view)
    if err then
      client.on_reply("agent/steering")(err)
      if on_error then
        on_error(err)
      end
      return
    end
    local generation = value(view.generation)
    if not generation then
      queue.add(correction)
      return
    end
    state.generation = generation
    local client_id = next_client_id()
    state.corrections[client_id] = correction
    local params = { sessionID = state.session_id, expectedGeneration = generation, clientID = client_id,
                     text = correction }
    client.request(c, "agent/steer", params, function(err2, receipt)
      if err2 then
        state.corrections[client_id] = nil
        client.on_reply("agent/steer")(err2)
        if on_error then
          on_error(err2)
        end
        return
      end
      settle(receipt)
    end)
  end)
end

-- The ctrl+s rule, on the server: steer the waiting prefix of the queue in order, stop at the first
-- row that cannot be steered; when idle, send the first row now.
function M.steer_now()
  local c = client.get()
  if not c or not state.session_id then
    return
  end
  client.request(c, "agent/steerPrefix", { sessionID = state.session_id }, function(err, result)
    if err then
      client.on_reply("agent/steerPrefix")(err)
      return
    end
    if #result.results == 0 then
      client.notify("nothing to steer: the first queued message cannot be steered (or the queue is empty)")
    end
    for _, r in ipairs(result.results) do
      local started = value(r.started)
      if started then
        state.generation = started.generation
        events.announce(started.generation, r.item.text)
      else
        events.append("-- steered: " .. first_line(r.item.text))
      end
    end
  end)
end

return M
