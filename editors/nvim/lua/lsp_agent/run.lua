-- Starting and stopping generations: agent/run (a prompt typed while one runs is queued instead),
-- agent/cancel, a new session, and the run the code action "Ask the agent to fix this" starts.
local client = require("lsp_agent.client")
local events = require("lsp_agent.events")
local queue = require("lsp_agent.queue")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")

local M = { handlers = {} }

-- A new generation, or a queued follow-up while one runs (nothing typed is refused or lost).
function M.run(prompt)
  local c = client.get()
  if not c then
    return
  end
  if state.session_id and state.generation then
    queue.add(prompt)
    return
  end
  local params = { prompt = prompt, sessionID = state.session_id }
  client.request(c, "agent/run", params, function(err, result)
    if err and state.session_id and err.data and err.data.kind == "busy" then
      queue.add(prompt) -- a generation we did not know about is running
      return
    elseif err then
      client.on_reply("agent/run")(err)
      return
    end
    state.session_id, state.generation = result.sessionID, result.generation
    events.announce(result.generation, prompt)
  end)
end

function M.cancel()
  local c = client.get()
  if c and state.session_id then
    client.request(c, "agent/cancel", { sessionID = state.session_id }, client.on_reply("agent/cancel"))
  end
end

-- Forget the session: the next run starts a new one.
function M.new_session()
  state.session_id, state.generation, state.queue, state.next_prompts = nil, nil, {}, {}
end

-- The code action "Ask the agent to fix this" (workspace/executeCommand) starts a run: follow it,
-- with a prompt line naming the failure (the server builds the full prompt).
M.handlers["workspace/executeCommand"] = function(err, result, ctx, config)
  local params = ctx and ctx.params or {}
  if not err and type(result) == "table" and result.sessionID and result.generation then
    state.session_id, state.generation = result.sessionID, result.generation
    local args = (params.arguments or {})[1] or {}
    local file = args.uri and vim.fn.fnamemodify(vim.uri_to_fname(args.uri), ":.") or "?"
    events.announce(result.generation, string.format("fix: %s failure in %s at line %s: %s", tostring(args.kind),
      file, tostring(args.line), text.first_line(args.message)))
    return result
  end
  local default = vim.lsp.handlers["workspace/executeCommand"]
  if default then
    return default(err, result, ctx, config)
  end
  if err then
    client.notify("command failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end
end

return M
