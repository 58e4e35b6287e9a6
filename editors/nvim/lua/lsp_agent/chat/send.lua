-- Sending what the user typed in the chat's prompt: a new run, or a queued follow-up while one
-- runs, or a correction steered into the running generation. The prompt is cleared only once the
-- server took it: a refused send keeps the text and says why with vim.notify.
local client = require("lsp_agent.client")
local context = require("lsp_agent.chat.context")
local events = require("lsp_agent.events")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")
local transcript = require("lsp_agent.chat.transcript")
local view = require("lsp_agent.chat.view")

local value = text.value

local M = { model = nil } -- model: the /model choice for the runs the chat starts

-- What a failed request means for the user, with what to do about it.
local function refused(what, err)
  local kind = type(err.data) == "table" and err.data.kind or nil
  local fix = kind == "attachment_refused" and " (remove or shorten the attachment, then send again)"
    or " (the prompt is kept: fix it and send again)"
  client.notify(string.format("%s refused%s: %s%s", what, kind and (" (" .. kind .. ")") or "",
    err.message or vim.inspect(err), fix), vim.log.levels.ERROR)
end

local function prompt_or_nil()
  local prompt = view.prompt_text():gsub("^%s+", ""):gsub("%s+$", "")
  if prompt == "" then
    client.notify("the prompt is empty: type below the separator line", vim.log.levels.WARN)
    return nil
  end
  return prompt
end

-- Adds `prompt` to the session's queue (it starts at once on an idle session).
local function queue(c, prompt, attachments)
  local params = { sessionID = state.session_id, text = prompt, attachments = attachments }
  client.request(c, "agent/queue/add", params, function(err, result)
    if err then
      refused("agent/queue/add", err)
      return
    end
    view.set_prompt("")
    local started = value(result.started)
    if started then
      state.generation = started.generation
      events.announce(started.generation, prompt)
    else
      transcript.line("_queued:_ " .. text.one_line(text.first_line(prompt)))
    end
  end)
end

-- <CR>: a new run, or a queued follow-up while a generation runs.
function M.send(slash)
  if not view.valid() then
    return
  end
  local prompt = prompt_or_nil()
  if not prompt then
    return
  end
  if prompt:sub(1, 1) == "/" then
    if slash.run(prompt) then
      view.set_prompt("")
    end
    return
  end
  local attachments, why = context.attachments(prompt)
  if not attachments then
    client.notify(why .. "; the prompt is kept", vim.log.levels.WARN)
    return
  end
  local c = client.get()
  if not c then
    return
  end
  if state.session_id and state.generation then
    queue(c, prompt, attachments)
    return
  end
  local params = { prompt = prompt, sessionID = state.session_id, attachments = attachments, model = M.model }
  client.request(c, "agent/run", params, function(err, result)
    if err and state.session_id and type(err.data) == "table" and err.data.kind == "busy" then
      queue(c, prompt, attachments) -- a generation we did not know about is running
      return
    elseif err then
      refused("agent/run", err)
      return
    end
    view.set_prompt("")
    state.session_id, state.generation = result.sessionID, result.generation
    events.announce(result.generation, prompt)
  end)
end

-- <C-s>: steer the prompt into the running generation (with no run: send it).
function M.steer(slash)
  if not view.valid() then
    return
  end
  if not (state.session_id and state.generation) then
    return M.send(slash)
  end
  local prompt = prompt_or_nil()
  if not prompt then
    return
  end
  local attachments = context.attachments(prompt)
  if not attachments or #attachments > 0 then
    client.notify("a correction cannot carry attachments: send it with <CR> (it is queued); the prompt is kept",
      vim.log.levels.WARN)
    return
  end
  view.set_prompt("")
  transcript.line("**You (steering):** " .. text.one_line(prompt))
  require("lsp_agent.steering").steer(prompt, function()
    view.add_to_prompt(prompt) -- not sent: the text goes back to the prompt
  end)
end

return M
