-- :AgentRewind: take the current session back to just before one of its user messages or steps —
-- the files (code), the conversation (a fork made current), both, or a preview of the diff — and
-- :AgentRewind undo. The server restores open buffers through an edit `u` undoes, other files on disk.
local client = require("lsp_agent.client")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")
local ui = require("lsp_agent.ui")

local M = {
  -- the last rewind: { session = where it was made, undo = its undo checkpoint, forked_from = the
  -- session that was current before a conversation rewind made the fork current }
  last = nil,
  preview_buf = nil,
}

local PAGE = 500

local WHAT = { "code", "conversation", "both", "preview" }
local WHAT_LABELS = {
  code = "Code: restore the files",
  conversation = "Conversation: continue in a fork from just before it",
  both = "Both: the files and a fork",
  preview = "Preview: the diff of the files (nothing changes)",
}
local CONFLICT_LABELS = { keep = "Keep mine", restore = "Restore them too" }

local function request(method, params, on_result)
  local c = client.get()
  if not c then
    return
  end
  client.request(c, method, params, function(err, result)
    if err then
      client.notify(method .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    on_result(result)
  end)
end

-- Every message of the session, page after page.
local function all_messages(session_id, on_done)
  local messages = {}
  local function page(after)
    request("agent/session", { sessionID = session_id, after = after, limit = PAGE }, function(result)
      vim.list_extend(messages, result.messages or {})
      if result.next and result.next ~= vim.NIL then
        page(result.next)
      else
        on_done(messages)
      end
    end)
  end
  page(nil)
end

local function user_text(message)
  for _, part in ipairs(message.parts or {}) do
    if part.type == "text" and not part.synthetic and part.text ~= "" then
      return part.text
    end
  end
  return nil
end

local function cut(s, n)
  return #s > n and (s:sub(1, n - 1) .. "…") or s
end

-- The choices, newest first: the user's messages, and the steps that wrote (tool + files).
function M.entries(messages, checkpoints)
  local steps = {}
  for _, ckpt in ipairs(checkpoints) do
    if ckpt.messageID ~= "" and ckpt.tool ~= "rewind" then
      local step = steps[ckpt.messageID] or { tools = {}, files = {}, seen = {} }
      steps[ckpt.messageID] = step
      if not step.seen["tool:" .. ckpt.tool] then
        step.seen["tool:" .. ckpt.tool] = true
        table.insert(step.tools, ckpt.tool)
      end
      for _, file in ipairs(ckpt.files or {}) do
        if not step.seen[file] then
          step.seen[file] = true
          table.insert(step.files, file)
        end
      end
    end
  end
  local entries = {}
  for _, message in ipairs(messages) do
    local said = message.role == "user" and user_text(message)
    local step = steps[message.id]
    if said then
      table.insert(entries, 1, { id = message.id, label = "you: " .. cut(text.first_line(said), 70) })
    elseif step then
      local files = #step.files > 0 and table.concat(step.files, ", ") or "no file changed"
      table.insert(entries, 1, { id = message.id,
                                 label = "step: " .. table.concat(step.tools, ", ") .. " — " .. cut(files, 70) })
    end
  end
  return entries
end

local function show_preview(diff)
  local buf = ui.scratch(M.preview_buf, "lsp-agent://rewind-preview")
  M.preview_buf = buf
  local lines = vim.split(diff ~= "" and diff or "nothing to restore", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  vim.api.nvim_buf_set_option(buf, "modifiable", true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buf, "filetype", "diff")
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  ui.show_at_bottom(buf)
end

local function list(paths)
  return table.concat(paths or {}, ", ")
end

local function keys(map)
  local out = {}
  for path, why in pairs(map or {}) do
    table.insert(out, path .. " (" .. tostring(why) .. ")")
  end
  table.sort(out)
  return out
end

-- What a rewind did, in one message.
function M.summary(result)
  local lines = {}
  if result.target ~= "" or (result.restored and #result.restored > 0) or (result.inEditor and #result.inEditor > 0) then
    table.insert(lines, "rewound" .. (result.target ~= "" and (" to " .. result.target) or ""))
  end
  if result.restored and #result.restored > 0 then
    table.insert(lines, "restored on disk: " .. list(result.restored))
  end
  if result.inEditor and #result.inEditor > 0 then
    table.insert(lines, "restored in buffers (u undoes): " .. list(result.inEditor))
  end
  if result.kept and #result.kept > 0 then
    table.insert(lines, "kept (changed outside the agent): " .. list(result.kept))
  end
  local failed = keys(vim.tbl_extend("force", result.unrestorable or {}, result.failed or {}))
  if #failed > 0 then
    table.insert(lines, "not restored: " .. table.concat(failed, "; "))
  end
  if result.sessionID and result.sessionID ~= vim.NIL then
    table.insert(lines, "the conversation continues in " .. result.sessionID)
  end
  if result.undo and result.undo ~= "" then
    table.insert(lines, "undo: :AgentRewind undo (" .. result.undo .. ")")
  end
  if #lines == 0 then
    table.insert(lines, "nothing to restore")
  end
  return table.concat(lines, "; ")
end

local function finish(session_id, what, result)
  local level = (result.kept and #result.kept > 0 or next(result.failed or {})) and vim.log.levels.WARN
    or vim.log.levels.INFO
  M.last = { session = session_id, undo = result.undo ~= "" and result.undo or nil }
  if what ~= "code" and result.sessionID and result.sessionID ~= vim.NIL then
    M.last.forked_from = session_id
    state.session_id, state.queue, state.next_prompts = result.sessionID, {}, {}
  end
  client.notify(M.summary(result), level)
end

local function rewind(session_id, entry, what, confirm)
  local params = { sessionID = session_id, toMessageID = entry.id, restore = what, confirm = confirm }
  request("agent/rewind", params, function(result)
    finish(session_id, what, result)
  end)
end

-- Files changed outside the agent since: asked about first (a dry run finds them).
local function with_conflicts_asked(session_id, entry, what)
  local probe = { sessionID = session_id, toMessageID = entry.id, restore = "code", dryRun = true }
  request("agent/rewind", probe, function(preview)
    local conflicts = preview.conflicts or {}
    if #conflicts == 0 then
      rewind(session_id, entry, what, false)
      return
    end
    vim.ui.select({ "keep", "restore" }, {
      prompt = "Changed outside the agent since then: " .. list(conflicts),
      kind = "lsp_agent_rewind_conflicts",
      format_item = function(item)
        return CONFLICT_LABELS[item]
      end,
    }, function(choice)
      if choice then
        rewind(session_id, entry, what, choice == "restore")
      end
    end)
  end)
end

local function chosen(session_id, entry)
  vim.ui.select(WHAT, {
    prompt = "Rewind to just before " .. entry.label,
    kind = "lsp_agent_rewind_what",
    format_item = function(item)
      return WHAT_LABELS[item]
    end,
  }, function(what)
    if not what then
      return
    elseif what == "preview" then
      request("agent/rewind", { sessionID = session_id, toMessageID = entry.id, restore = "code", dryRun = true },
        function(result)
          show_preview(result.diff or "")
        end)
    elseif what == "conversation" then
      rewind(session_id, entry, what, false)
    else
      with_conflicts_asked(session_id, entry, what)
    end
  end)
end

function M.pick()
  local session_id = state.session_id
  if not session_id then
    client.notify("no session to rewind yet (:AgentRun starts one)", vim.log.levels.WARN)
    return
  end
  if state.generation then
    client.notify("a run is going on; :AgentCancel it or wait, then rewind", vim.log.levels.WARN)
    return
  end
  all_messages(session_id, function(messages)
    request("agent/checkpoints", { sessionID = session_id }, function(result)
      local entries = M.entries(messages, result.checkpoints or {})
      if #entries == 0 then
        client.notify("nothing to rewind to in this session", vim.log.levels.WARN)
        return
      end
      vim.ui.select(entries, {
        prompt = "Rewind the session to just before:",
        kind = "lsp_agent_rewind",
        format_item = function(entry)
          return entry.label
        end,
      }, function(entry)
        if entry then
          chosen(session_id, entry)
        end
      end)
    end)
  end)
end

-- Undo the last rewind: its files back (a rewind to the checkpoint it returned), and the session
-- that was current before a conversation rewind current again.
function M.undo()
  local last = M.last
  if not last then
    client.notify("no rewind to undo", vim.log.levels.WARN)
    return
  end
  local function back()
    if last.forked_from then
      state.session_id, state.queue, state.next_prompts = last.forked_from, {}, {}
    end
    M.last = nil
  end
  if not last.undo then
    back()
    client.notify("rewind undone: the conversation continues in " .. tostring(state.session_id))
    return
  end
  request("agent/rewind", { sessionID = last.session, toMessageID = last.undo, restore = "code" },
    function(result)
      back()
      result.undo = ""
      client.notify("rewind undone: " .. M.summary(result))
    end)
end

function M.command(args)
  if args == "undo" then
    M.undo()
  elseif args == nil or args == "" then
    M.pick()
  else
    client.notify(":AgentRewind takes nothing or `undo`", vim.log.levels.ERROR)
  end
end

return M
