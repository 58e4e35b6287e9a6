-- The session's follow-up queue: agent/queue/add, the scratch buffer lsp-agent://queue, and
-- agent/queueChanged, which also tells which waiting row started the next generation.
local client = require("lsp_agent.client")
local events = require("lsp_agent.events")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")
local ui = require("lsp_agent.ui")

local first_line, value = text.first_line, text.value

local M = { handlers = {} }

-- Waiting rows first, numbered in the order they will run; then the history (sent, cancelled).
local function queue_lines(items)
  local lines = { "lsp-agent queue · session " .. tostring(state.session_id), "" }
  local n, history = 0, false
  for _, item in ipairs(items) do
    local notes = {}
    if item.kind ~= "follow_up" then
      table.insert(notes, item.kind)
    end
    if item.attachments and #item.attachments > 0 then
      table.insert(notes, #item.attachments .. " attachment(s)")
    end
    if item.status == "failed" and value(item.error) then
      table.insert(notes, tostring(item.error))
    end
    if value(item.steeredInto) then
      table.insert(notes, value(item.steeredAppliedAt) and "steered, applied" or "steered, pending")
    end
    local note = #notes > 0 and ("  (" .. table.concat(notes, ", ") .. ")") or ""
    if item.status == "queued" or item.status == "paused" then
      n = n + 1
      table.insert(lines, string.format("%2d. %-9s %s%s", n, item.status, first_line(item.text), note))
    else
      if not history then
        history = true
        table.insert(lines, "-- history")
      end
      table.insert(lines, string.format("    %-9s %s%s", item.status, first_line(item.text), note))
    end
  end
  if #items == 0 then
    table.insert(lines, "(empty)")
  end
  return lines
end

local function render()
  if not (state.queue_buf and vim.api.nvim_buf_is_valid(state.queue_buf)) then
    return
  end
  vim.api.nvim_buf_set_option(state.queue_buf, "modifiable", true)
  vim.api.nvim_buf_set_lines(state.queue_buf, 0, -1, false, queue_lines(state.queue))
  vim.api.nvim_buf_set_option(state.queue_buf, "modifiable", false)
end

-- A row seen waiting that is now sent started the session's next generation.
local function note_sent(items)
  for _, item in ipairs(items) do
    local before = state.row_status[item.id]
    if item.status == "sent" and (before == "queued" or before == "paused") and not value(item.steeredInto) then
      table.insert(state.next_prompts, item.text)
    end
    state.row_status[item.id] = item.status
  end
end

M.handlers["agent/queueChanged"] = function(_, params, _)
  if params.sessionID == state.session_id then
    note_sent(params.items)
    state.queue = params.items
    render()
  end
end

-- Queue a message; on an idle session with nothing queued ahead the server starts it at once.
function M.add(message)
  local c = client.get()
  if not c or not state.session_id then
    return
  end
  client.request(c, "agent/queue/add", { sessionID = state.session_id, text = message }, function(err, result)
    if err then
      client.on_reply("agent/queue/add")(err)
      return
    end
    local started = value(result.started)
    if started then
      state.generation = started.generation
      events.announce(started.generation, message)
    else
      events.append("-- queued: " .. first_line(message))
    end
  end)
end

function M.show()
  local c = client.get()
  if not c or not state.session_id then
    client.notify("no session yet", vim.log.levels.WARN)
    return
  end
  state.queue_buf = ui.scratch(state.queue_buf, "lsp-agent://queue")
  ui.show_at_bottom(state.queue_buf)
  client.request(c, "agent/queue/list", { sessionID = state.session_id }, function(err, result)
    if err then
      client.on_reply("agent/queue/list")(err)
      return
    end
    note_sent(result.items)
    state.queue = result.items
    render()
  end)
end

return M
