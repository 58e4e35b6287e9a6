-- lsp-agent for Neovim 0.7+ (vim.lsp.config/vim.lsp.enable on 0.11+, vim.lsp.start on 0.8-0.10,
-- vim.lsp.start_client on 0.7).
--
--   local agent = require("lsp_agent")      -- this file on 'runtimepath' as lua/lsp_agent.lua
--   agent.setup({ init_options = { model = "ollama/qwen2.5-coder" } })
--
-- Commands: :AgentRun {prompt}  :AgentSteer {text}  :AgentSteerNow  :AgentQueue  :AgentCancel  :AgentMcp
--           :AgentEvents  :AgentNew  :LspAgentTrust [show|trust|revoke]
-- Events stream into the scratch buffer `lsp-agent://events`; edits arrive as workspace/applyEdit
-- (built in, with undo); before a check the server asks to save the buffers it edited
-- (agent/saveDocuments), answered here with :write. A prompt typed while a generation runs is
-- queued (agent/queue/add); :AgentQueue shows the queue in `lsp-agent://queue`. Calls the approval
-- policy names are put to the user with vim.ui.select (agent/requestApproval). The workspace's own
-- .lsp-agent configuration that would start programs, pick endpoints or keys, widen allow-lists or
-- lift limits is ignored by the server until you trust it: asked with vim.ui.select when the server
-- says so (agent/workspaceTrustChanged), or with :LspAgentTrust.
-- The workspace is the nearest directory above the current file (or the start directory) holding one
-- of `root_markers` (default `.git`, `.lsp-agent`); without one the server is not started (pass
-- `root_dir` to choose it yourself). Failed runs and their errors are shown with vim.notify; the
-- server's progress messages are echoed.

local M = {
  client_id = nil,
  session_id = nil,   -- the conversation :AgentRun continues (:AgentNew starts another)
  generation = nil,   -- the running generation, if any
  last_finish = nil,  -- the last run_finish event
  events_buf = nil,
  queue = {},         -- the session's follow-up queue, as the last agent/queueChanged sent it
  queue_buf = nil,
  receipts = {},      -- steering receipts by clientID, as agent/receipt updates them
  approval_wait_ms = 300000, -- how long an approval question waits for vim.ui.select (then: deny)
  root_markers = { ".git", ".lsp-agent" },
  show_progress = true, -- echo the server's $/progress messages
  gen_line = {},      -- generation -> the events-buffer line (0-based) where its lines begin
  announced = {},     -- generation -> true once its prompt line (== text) is in the events buffer
  run_error = {},     -- generation -> the message of its last error event
  row_status = {},    -- queue row id -> the status last seen
  next_prompts = {},  -- texts of waiting rows just sent: the prompts of the generations starting next
  corrections = {},   -- clientID -> text of a correction :AgentSteer sent, until it is applied or rejected
  stopped = {},       -- generation -> its stop reason, from its run_finish
  trust = nil,        -- the workspace trust state the server last reported (agent/workspaceTrust)
  trust_asked = {},   -- hash -> true once the user was asked about those files (asked once per hash)
}

local steer_seq = 0

local function notify(message, level)
  vim.notify("lsp-agent: " .. message, level or vim.log.levels.INFO)
end

local function client()
  local c = M.client_id and vim.lsp.get_client_by_id(M.client_id)
  if not c or not c.initialized then
    notify("the server is not running (yet); call require('lsp_agent').setup()", vim.log.levels.WARN)
    return nil
  end
  return c
end

-- A request to the server (`client:request` on 0.11+, where `client.request` is deprecated).
local function request(c, method, params, handler)
  if vim.fn.has("nvim-0.11") == 1 then
    return c:request(method, params, handler)
  end
  return c.request(method, params, handler)
end

-- events ---------------------------------------------------------------------------------------

local function events_buffer()
  if M.events_buf and vim.api.nvim_buf_is_valid(M.events_buf) then
    return M.events_buf
  end
  M.events_buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(M.events_buf, "lsp-agent://events")
  return M.events_buf
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

-- Inserts `text` before line `at` (0-based; nil: at the end); returns the line it landed on.
local function append(text, at)
  local buf = events_buffer()
  local lines = vim.split(text, "\n", { plain = true })
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
    for generation, line in pairs(M.gen_line) do -- the later generations' lines moved down
      if line >= at then
        M.gen_line[generation] = line + #lines
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
local function announce(generation, text)
  if generation == nil or M.announced[generation] then
    return
  end
  M.announced[generation] = true
  for i, waiting in ipairs(M.next_prompts) do
    if waiting == text then -- the reply that started it came first: not the next one's prompt
      table.remove(M.next_prompts, i)
      break
    end
  end
  local at = M.gen_line[generation]
  local line = append("== " .. text, at)
  if at == nil then
    M.gen_line[generation] = line
  end
end

local function first_line(text)
  return (tostring(text or ""):gsub("\n.*", ""))
end

local function value(x) -- JSON null arrives as vim.NIL
  if x == vim.NIL then
    return nil
  end
  return x
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

local handlers = {}

-- A run that did not end well is shown even when lsp-agent://events is not open.
local function report_finish(event, generation)
  local err = value(event.error)
  local message = (err and err.message) or M.run_error[generation]
  M.run_error[generation] = nil
  if event.stopReason == "error" then
    notify("run failed: " .. (message or "unknown error"), vim.log.levels.ERROR)
  elseif event.stopReason == "step_limit" or event.stopReason == "loop" then
    notify(string.format("run stopped (%s) after %d steps · verification: %s", event.stopReason, event.steps,
      event.verification), vim.log.levels.WARN)
  elseif event.verification == "failed" then
    notify("run ended, but its checks failed (verification: failed)", vim.log.levels.WARN)
  end
end

handlers["agent/event"] = function(_, params, _)
  local event = params.event
  if event.type == "run_finish" then
    M.last_finish = event
    M.stopped[params.generation] = event.stopReason
    if M.generation == params.generation then
      M.generation = nil
    end
    report_finish(event, params.generation)
  elseif params.sessionID == M.session_id then
    M.generation = params.generation -- also generations a queued follow-up started
  end
  if event.type == "error" then
    M.run_error[params.generation] = event.error.message
  end
  -- A waiting follow-up the server started when the previous generation ended: its prompt line.
  if params.sessionID == M.session_id and not M.announced[params.generation] and M.gen_line[params.generation] == nil
      and #M.next_prompts > 0 then
    announce(params.generation, table.remove(M.next_prompts, 1))
  end
  local line = describe(event)
  if line then
    local at = append(line)
    if M.gen_line[params.generation] == nil then
      M.gen_line[params.generation] = at
    end
  end
end

-- $/progress: Neovim 0.7 keeps the messages without showing them; echo "lsp-agent: step k of N · tool".
local function echo_progress(params)
  local v = params.value or {}
  local text = v.message or v.title
  if type(text) == "string" and text ~= "" then
    vim.api.nvim_echo({ { "lsp-agent: " .. text } }, false, {})
  end
end

handlers["$/progress"] = function(err, params, ctx, config)
  local default = vim.lsp.handlers["$/progress"]
  local result = default and default(err, params, ctx, config)
  if params and M.show_progress then
    pcall(echo_progress, params)
  end
  return result
end

-- The built-in handler echoes "Workspace edit <label>" for every edit; the edit itself is enough.
handlers["workspace/applyEdit"] = function(err, params, ctx, config)
  if params then
    params.label = nil
  end
  return vim.lsp.handlers["workspace/applyEdit"](err, params, ctx, config)
end

-- The code action "Ask the agent to fix this" (workspace/executeCommand) starts a run: follow it,
-- with a prompt line naming the failure (the server builds the full prompt).
handlers["workspace/executeCommand"] = function(err, result, ctx, config)
  local params = ctx and ctx.params or {}
  if not err and type(result) == "table" and result.sessionID and result.generation then
    M.session_id, M.generation = result.sessionID, result.generation
    local args = (params.arguments or {})[1] or {}
    local file = args.uri and vim.fn.fnamemodify(vim.uri_to_fname(args.uri), ":.") or "?"
    announce(result.generation, string.format("fix: %s failure in %s at line %s: %s", tostring(args.kind),
      file, tostring(args.line), first_line(args.message)))
    return result
  end
  local default = vim.lsp.handlers["workspace/executeCommand"]
  if default then
    return default(err, result, ctx, config)
  end
  if err then
    notify("command failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end
end

-- queue and steering ----------------------------------------------------------------------------

-- Waiting rows first, numbered in the order they will run; then the history (sent, cancelled).
local function queue_lines(items)
  local lines = { "lsp-agent queue · session " .. tostring(M.session_id), "" }
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

local function render_queue()
  if not (M.queue_buf and vim.api.nvim_buf_is_valid(M.queue_buf)) then
    return
  end
  vim.api.nvim_buf_set_option(M.queue_buf, "modifiable", true)
  vim.api.nvim_buf_set_lines(M.queue_buf, 0, -1, false, queue_lines(M.queue))
  vim.api.nvim_buf_set_option(M.queue_buf, "modifiable", false)
end

-- A row seen waiting that is now sent started the session's next generation.
local function note_sent(items)
  for _, item in ipairs(items) do
    local before = M.row_status[item.id]
    if item.status == "sent" and (before == "queued" or before == "paused") and not value(item.steeredInto) then
      table.insert(M.next_prompts, item.text)
    end
    M.row_status[item.id] = item.status
  end
end

handlers["agent/queueChanged"] = function(_, params, _)
  if params.sessionID == M.session_id then
    note_sent(params.items)
    M.queue = params.items
    render_queue()
  end
end

-- Reasons for which a correction's text is queued instead (nothing typed is lost): the generation
-- ended or another started before the correction could land (also after it had been accepted).
local REQUEUE = { generation_not_active = true, stale_generation = true,
                  generation_ended_before_application = true }

-- The end of one :AgentSteer correction, from the agent/steer answer or a later agent/receipt
-- (whichever comes first; the text is handled once).
local function settle_correction(receipt)
  local text = M.corrections[receipt.clientID]
  if text == nil or receipt.status == "accepted" then
    return
  end
  M.corrections[receipt.clientID] = nil
  if receipt.status ~= "rejected" then
    return
  end
  local reason = value(receipt.reason)
  local stopped = M.stopped[value(receipt.generation)]
  if REQUEUE[reason] and (stopped == "cancelled" or stopped == "error") then
    -- Not started by itself after an interrupt (the server pauses steered rows the same way).
    notify(string.format("correction not applied, the run ended (%s): %s", stopped, text), vim.log.levels.WARN)
  elseif REQUEUE[reason] then
    M.queue_add(text)
  else
    notify("correction rejected: " .. tostring(reason), vim.log.levels.WARN)
  end
end

handlers["agent/receipt"] = function(_, params, _)
  local receipt = params.receipt
  M.receipts[receipt.clientID] = receipt
  local reason = value(receipt.reason)
  append("~~ correction " .. receipt.status .. (reason and (" (" .. reason .. ")") or ""))
  settle_correction(receipt)
end

-- The server asks to save the buffers the agent edited, so its checks test what is in them.
handlers["agent/saveDocuments"] = function(_, params, _)
  local saved, failed = {}, {}
  for _, uri in ipairs(params.uris or {}) do
    local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
    if bufnr == -1 or not vim.api.nvim_buf_is_loaded(bufnr) then
      table.insert(failed, { uri = uri, reason = "not open in Neovim" })
    else
      local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
        vim.cmd("silent write")
      end)
      if ok then
        table.insert(saved, uri)
      else
        table.insert(failed, { uri = uri, reason = tostring(err) })
      end
    end
  end
  return { saved = saved, failed = failed }
end

-- approval policy (agent/requestApproval) -----------------------------------------------------

local APPROVAL_LABELS = { allow_once = "Allow once", allow_session = "Allow for this session", deny = "Deny" }

-- Text from the server that quotes repository or model content, on one line: control characters
-- (C0, DEL, C1) are written out as \xNN, so a line break or escape sequence in a command's
-- arguments cannot add a line of its own to the menu (a forged item or a reassuring sentence).
local function one_line(text)
  local escaped = tostring(text or ""):gsub("%c", function(c)
    return string.format("\\x%02x", c:byte())
  end)
  return (escaped:gsub("\194([\128-\159])", function(c)
    return string.format("\\x%02x", c:byte())
  end))
end

-- The server asks before a call its approval policy names (a command under "untrusted", one that
-- would run without a sandbox, an MCP tool that may change things). vim.ui.select may answer later
-- (UI plugins); vim.wait keeps the event loop running until it does. No choice means deny, and so
-- does the server's own timeout (approvalTimeoutS).
handlers["agent/requestApproval"] = function(_, params, _)
  local decision = nil
  local options = params.options or { "allow_once", "allow_session", "deny" }
  append("?? approval asked: " .. params.tool .. ": " .. first_line(params.what))
  local prompt = "lsp-agent asks to approve " .. params.tool .. ": " .. params.what .. " (why: " .. params.why .. ")"
  -- "for this session" says what it covers: the server's sessionScope (absent from older servers)
  local scope = value(params.sessionScope)
  vim.ui.select(options, {
    prompt = prompt,
    kind = "lsp_agent_approval",
    format_item = function(item)
      if item == "allow_session" and type(scope) == "string" and scope ~= "" then
        return APPROVAL_LABELS.allow_session .. ": " .. one_line(scope)
      end
      return APPROVAL_LABELS[item] or item
    end,
  }, function(choice)
    decision = choice or "deny"
  end)
  vim.wait(M.approval_wait_ms, function()
    return decision ~= nil
  end, 20)
  return { decision = decision or "deny" }
end

-- commands -------------------------------------------------------------------------------------

local function on_reply(what)
  return function(err, result)
    if err then
      notify(what .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    return result
  end
end

-- workspace trust (agent/workspaceTrust, agent/workspaceTrustChanged) ---------------------------

local TRUST_YES, TRUST_NO = "Trust and apply", "Not now"

local function ignoring(state)
  return state ~= nil and (state.state == "untrusted" or state.state == "changed") and #(state.gated or {}) > 0
end

-- The effects of the ignored settings, one per line, in the server's order.
function M.trust_lines(state)
  local lines = {}
  local what = {
    trusted = "trusted: its configuration applies",
    untrusted = "not trusted: its own configuration is ignored",
    changed = "changed since you trusted it: its configuration is ignored until you trust it again",
    nothing_to_trust = "nothing in it needs trust",
  }
  table.insert(lines, "workspace " .. one_line(state.root) .. " is " .. (what[state.state] or tostring(state.state)))
  for _, g in ipairs(state.gated or {}) do
    table.insert(lines, "  - " .. one_line(g.effect))
  end
  return lines
end

local trust_request

-- Ask with vim.ui.select; "Trust and apply" trusts exactly the hash that was shown.
local function ask_trust(state)
  local hash = value(state.hash)
  if not hash then
    return
  end
  M.trust_asked[hash] = true
  local head = state.state == "changed" and "lsp-agent: this workspace's own configuration changed since you trusted it. It would:"
    or "lsp-agent: this workspace's own configuration would:"
  local prompt = head
  for _, g in ipairs(state.gated or {}) do
    prompt = prompt .. "\n  - " .. one_line(g.effect)
  end
  prompt = prompt .. "\n(from " .. one_line(table.concat(state.files or {}, ", ")) .. "; ignored until you trust it)"
  vim.ui.select({ TRUST_YES, TRUST_NO }, { prompt = prompt, kind = "lsp_agent_trust" }, function(choice)
    if choice == TRUST_YES then
      trust_request("trust", hash)
    else
      notify("the workspace configuration stays ignored (:LspAgentTrust trust to trust it)")
    end
  end)
end

-- One agent/workspaceTrust request; the answer is the new state. A trust refused because the files
-- changed since they were shown shows them again.
trust_request = function(action, hash, on_state)
  local c = client()
  if not c then
    return
  end
  request(c, "agent/workspaceTrust", { action = action, hash = hash }, function(err, state)
    if err then
      local data = value(err.data)
      if action == "trust" and type(data) == "table" and data.kind == "trust_changed" then
        notify("the workspace configuration changed since it was shown; here it is again", vim.log.levels.WARN)
        trust_request("show", nil, function(fresh)
          if ignoring(fresh) then
            ask_trust(fresh)
          end
        end)
        return
      end
      on_reply("agent/workspaceTrust " .. action)(err)
      return
    end
    M.trust = state
    if action == "trust" then
      notify("workspace configuration trusted and applied")
    elseif action == "revoke" then
      notify("workspace trust revoked; its configuration is ignored again")
    end
    if on_state then
      on_state(state)
    end
  end)
end

-- The server ignores the workspace's gated settings: ask once per hash (the agent works meanwhile;
-- the server never waits for this answer).
handlers["agent/workspaceTrustChanged"] = function(_, params, _)
  M.trust = params
  local hash = value(params.hash)
  if not ignoring(params) or not hash or M.trust_asked[hash] then
    return
  end
  M.trust_asked[hash] = true
  vim.schedule(function()
    ask_trust(params)
  end)
end

-- :LspAgentTrust [show|trust|revoke]
function M.trust_command(action)
  action = (action == nil or action == "") and "show" or action
  if action == "show" then
    trust_request("show", nil, function(state)
      notify(table.concat(M.trust_lines(state), "\n"))
    end)
  elseif action == "trust" then
    trust_request("show", nil, function(state)
      if ignoring(state) then
        ask_trust(state)
      else
        notify(table.concat(M.trust_lines(state), "\n"))
      end
    end)
  elseif action == "revoke" then
    trust_request("revoke")
  else
    notify("usage: :LspAgentTrust [show|trust|revoke]", vim.log.levels.ERROR)
  end
end

-- Queue a message; on an idle session with nothing queued ahead the server starts it at once.
function M.queue_add(text)
  local c = client()
  if not c or not M.session_id then
    return
  end
  request(c, "agent/queue/add", { sessionID = M.session_id, text = text }, function(err, result)
    if err then
      on_reply("agent/queue/add")(err)
      return
    end
    local started = value(result.started)
    if started then
      M.generation = started.generation
      announce(started.generation, text)
    else
      append("-- queued: " .. first_line(text))
    end
  end)
end

-- A new generation, or a queued follow-up while one runs (nothing typed is refused or lost).
function M.run(prompt)
  local c = client()
  if not c then
    return
  end
  if M.session_id and M.generation then
    M.queue_add(prompt)
    return
  end
  local params = { prompt = prompt, sessionID = M.session_id }
  request(c, "agent/run", params, function(err, result)
    if err and M.session_id and err.data and err.data.kind == "busy" then
      M.queue_add(prompt) -- a generation we did not know about is running
      return
    elseif err then
      on_reply("agent/run")(err)
      return
    end
    M.session_id, M.generation = result.sessionID, result.generation
    announce(result.generation, prompt)
  end)
end

local function next_client_id()
  steer_seq = steer_seq + 1
  return string.format("nvim-%d-%d-%d", vim.loop.os_getpid(), os.time(), steer_seq)
end

-- Steer the running generation; when none runs, queue the text instead (which starts it).
function M.steer(text)
  local c = client()
  if not c then
    return
  end
  if not M.session_id then
    M.run(text)
    return
  end
  request(c, "agent/steering", { sessionID = M.session_id }, function(err, view)
    if err then
      on_reply("agent/steering")(err)
      return
    end
    local generation = value(view.generation)
    if not generation then
      M.queue_add(text)
      return
    end
    M.generation = generation
    local client_id = next_client_id()
    M.corrections[client_id] = text
    local params = { sessionID = M.session_id, expectedGeneration = generation, clientID = client_id, text = text }
    request(c, "agent/steer", params, function(err2, receipt)
      if err2 then
        M.corrections[client_id] = nil
        on_reply("agent/steer")(err2)
        return
      end
      settle_correction(receipt)
    end)
  end)
end

-- The ctrl+s rule, on the server: steer the waiting prefix of the queue in order, stop at the first
-- row that cannot be steered; when idle, send the first row now.
function M.steer_now()
  local c = client()
  if not c or not M.session_id then
    return
  end
  request(c, "agent/steerPrefix", { sessionID = M.session_id }, function(err, result)
    if err then
      on_reply("agent/steerPrefix")(err)
      return
    end
    if #result.results == 0 then
      notify("nothing to steer: the first queued message cannot be steered (or the queue is empty)")
    end
    for _, r in ipairs(result.results) do
      local started = value(r.started)
      if started then
        M.generation = started.generation
        announce(started.generation, r.item.text)
      else
        append("-- steered: " .. first_line(r.item.text))
      end
    end
  end)
end

function M.show_queue()
  local c = client()
  if not c or not M.session_id then
    notify("no session yet", vim.log.levels.WARN)
    return
  end
  if not (M.queue_buf and vim.api.nvim_buf_is_valid(M.queue_buf)) then
    M.queue_buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(M.queue_buf, "lsp-agent://queue")
  end
  if vim.fn.bufwinnr(M.queue_buf) == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, M.queue_buf)
  end
  request(c, "agent/queue/list", { sessionID = M.session_id }, function(err, result)
    if err then
      on_reply("agent/queue/list")(err)
      return
    end
    note_sent(result.items)
    M.queue = result.items
    render_queue()
  end)
end

function M.cancel()
  local c = client()
  if c and M.session_id then
    request(c, "agent/cancel", { sessionID = M.session_id }, on_reply("agent/cancel"))
  end
end

-- Focus the window already showing the events, else open one at the bottom; the cursor goes to
-- the last line, so the window follows new lines.
function M.show_events()
  local buf = events_buffer()
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
  end
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
end

-- The MCP servers (agent/mcp/list, started first): one line per server, then its tools.
function M.mcp_lines(list)
  local lines = {}
  for _, s in ipairs(list.servers or {}) do
    local err = value(s.error)
    table.insert(lines, string.format("%s  %s  %s%s  %d tools%s", s.name, s.state, s.transport,
      s.trusted and "  trusted" or "", #(s.tools or {}), err and ("  -- " .. first_line(err)) or ""))
    for _, t in ipairs(s.tools or {}) do
      table.insert(lines, string.format("  %s  (%s)  %s", t.name, t.readOnly and "read-only" or "exclusive",
        first_line(t.description or "")))
    end
    for _, k in ipairs(s.skipped or {}) do
      table.insert(lines, string.format("  [skipped] %s: %s", k.tool, k.reason))
    end
  end
  if #lines == 0 then
    lines = { "no MCP servers configured ([mcp.servers.NAME] in .lsp-agent/config.toml)" }
  end
  return lines
end

function M.show_mcp()
  local c = client()
  if not c then
    return
  end
  request(c, "agent/mcp/list", { start = true }, function(err, result)
    if err then
      on_reply("agent/mcp/list")(err)
      return
    end
    if not (M.mcp_buf and vim.api.nvim_buf_is_valid(M.mcp_buf)) then
      M.mcp_buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_name(M.mcp_buf, "lsp-agent://mcp")
    end
    vim.api.nvim_buf_set_lines(M.mcp_buf, 0, -1, false, M.mcp_lines(result))
    if vim.fn.bufwinnr(M.mcp_buf) == -1 then
      vim.cmd("botright split")
      vim.api.nvim_win_set_buf(0, M.mcp_buf)
    end
  end)
end

-- setup ----------------------------------------------------------------------------------------

local function under(root, name)
  return name ~= "" and (name == root or name:sub(1, #root + 1) == root .. "/")
end

-- The nearest directory at or above `start` that holds one of `markers` (nil: none).
function M.find_root(start, markers)
  local dir = vim.fn.fnamemodify(start, ":p"):gsub("/$", "")
  while true do
    for _, marker in ipairs(markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then
        return dir == "" and "/" or dir
      end
    end
    if dir == "" then
      return nil
    end
    dir = dir:match("^(.*)/[^/]*$") or ""
  end
end

-- Where the root search starts: the current file's directory, else the start directory.
local function search_start()
  local name = vim.api.nvim_buf_get_name(0)
  if name ~= "" and vim.bo.buftype == "" then
    return vim.fn.fnamemodify(name, ":p:h")
  end
  return vim.loop.cwd()
end

-- Neovim 0.11+ has vim.lsp.config/vim.lsp.enable: file buffers under the root attach through it.
local function has_lsp_config()
  return vim.fn.has("nvim-0.11") == 1 and vim.lsp.config ~= nil and vim.lsp.enable ~= nil
end

local function start_client(config, root)
  if has_lsp_config() then
    local enabled = vim.tbl_extend("force", config, {
      root_dir = function(bufnr, on_dir)
        if vim.bo[bufnr].buftype == "" and under(root, vim.api.nvim_buf_get_name(bufnr)) then
          on_dir(root)
        end
      end,
    })
    vim.lsp.config(config.name, enabled)
    vim.lsp.enable(config.name)
    -- Started now too (not at the first file), so :AgentRun works in an empty Neovim; the buffers
    -- vim.lsp.enable attaches reuse this client (same name and root).
    return vim.lsp.start(config, { attach = false })
  elseif vim.lsp.start then
    return vim.lsp.start(config)
  end
  return vim.lsp.start_client(config)
end

-- A table sent as a JSON object: an empty Lua table would be encoded as an array.
local function object(t)
  if t == nil or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

function M.setup(opts)
  opts = opts or {}
  M.root_markers = opts.root_markers or M.root_markers
  if opts.progress ~= nil then
    M.show_progress = opts.progress
  end
  local root = opts.root_dir
  if root == nil then
    root = M.find_root(search_start(), M.root_markers)
    if root == nil then
      notify("no workspace: none of " .. table.concat(M.root_markers, ", ") .. " above " .. search_start()
        .. "; not started (create .lsp-agent/ in the project, or pass root_dir to setup)", vim.log.levels.WARN)
      return nil
    end
  end
  root = vim.fn.fnamemodify(root, ":p"):gsub("/$", "")
  if root == "" then
    root = "/"
  end
  M.root = root
  local config = {
    name = "lsp-agent",
    cmd = opts.cmd or { "lsp-agent", "serve" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = object(opts.init_options),
    settings = { lspAgent = object(opts.settings) },
    handlers = handlers,
    flags = opts.flags or {},
  }
  M.client_id = start_client(config, root)
  if not M.client_id then
    notify("could not start " .. table.concat(config.cmd, " "), vim.log.levels.ERROR)
    return
  end
  -- Every file buffer under the root is synchronised, so the agent reads unsaved text.
  local function attach(bufnr)
    if vim.api.nvim_buf_get_option(bufnr, "buftype") == "" and under(root, vim.api.nvim_buf_get_name(bufnr)) then
      vim.lsp.buf_attach_client(bufnr, M.client_id)
    end
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      attach(bufnr)
    end
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    callback = function(args)
      attach(args.buf)
    end,
  })
  vim.api.nvim_create_user_command("AgentRun", function(c) M.run(c.args) end, { nargs = "+" })
  vim.api.nvim_create_user_command("AgentSteer", function(c) M.steer(c.args) end, { nargs = "+" })
  vim.api.nvim_create_user_command("AgentSteerNow", function() M.steer_now() end, { nargs = 0 })
  vim.api.nvim_create_user_command("AgentQueue", function() M.show_queue() end, { nargs = 0 })
  vim.api.nvim_create_user_command("AgentCancel", function() M.cancel() end, { nargs = 0 })
  vim.api.nvim_create_user_command("AgentEvents", function() M.show_events() end, { nargs = 0 })
  vim.api.nvim_create_user_command("AgentMcp", function() M.show_mcp() end, { nargs = 0 })
  vim.api.nvim_create_user_command("LspAgentTrust", function(c) M.trust_command(c.args) end, {
    nargs = "?",
    complete = function()
      return { "show", "trust", "revoke" }
    end,
  })
  vim.api.nvim_create_user_command("AgentNew", function()
    M.session_id, M.generation, M.queue, M.next_prompts = nil, nil, {}, {}
  end, { nargs = 0 })
  return M.client_id
end

return M
