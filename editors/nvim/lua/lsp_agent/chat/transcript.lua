-- The transcript part of the chat buffer, built from the run's agent/event stream: the user's
-- messages, the model's text (deltas appended as they come, the final text replacing them), each
-- tool call as one line folding its output, and the stop line with the verification in words.
local text = require("lsp_agent.text")
local view = require("lsp_agent.chat.view")
local words = require("lsp_agent.chat.words")

local value, one_line = text.value, text.one_line

local M = {}

-- partID -> { mark, count, text }; generation/callID -> { mark, outputs, failed }; generation -> last check
local parts, tools, last_check = {}, {}, {}

function M.reset()
  parts, tools, last_check = {}, {}, {}
end

local function lines_of(s)
  return vim.split(tostring(s or ""), "\n", { plain = true })
end

local function row_of(mark)
  return vim.api.nvim_buf_get_extmark_by_id(view.chat.buf, view.ns, mark, {})[1]
end

local function mark_at(row, id)
  return vim.api.nvim_buf_set_extmark(view.chat.buf, view.ns, row, 0, { id = id })
end

-- A line of model or user text must not look like a tool line or tool output to the fold
-- expression: such a line gets a zero-width space in front.
local function plain(lines)
  for i, line in ipairs(lines) do
    if line:sub(1, #view.TOOL) == view.TOOL or line:sub(1, #view.OUTPUT) == view.OUTPUT then
      lines[i] = "\226\128\139" .. line
    end
  end
  return lines
end

function M.user(prompt)
  local lines = plain(lines_of(prompt))
  lines[1] = "**You:** " .. lines[1]
  table.insert(lines, "")
  view.with_follow(function()
    view.append_transcript(lines)
  end)
end

function M.line(s)
  view.with_follow(function()
    view.append_transcript(plain(lines_of(s)))
  end)
end

-- The model's text of one part: rewritten whole on each delta (the lines it covers are known).
local function set_part(id, s)
  local part = parts[id]
  local lines = plain(lines_of(s))
  view.with_follow(function()
    if part == nil then
      local row = view.append_transcript(lines)
      parts[id] = { mark = mark_at(row), count = #lines, text = s }
    else
      local row = row_of(part.mark)
      view.set_transcript(row, row + part.count, lines)
      part.mark, part.count, part.text = mark_at(row, part.mark), #lines, s
    end
  end)
end

local function summary(tool, input)
  if type(input) == "table" then
    local shown = input.command or input.path or input.pattern or input.query or input.file
    if type(shown) == "table" then
      shown = table.concat(vim.tbl_map(tostring, shown), " ")
    end
    if shown == nil then
      local ok, encoded = pcall(vim.json.encode, input)
      shown = (ok and encoded ~= "{}" and encoded ~= "[]") and encoded or ""
    end
    input = shown
  end
  local s = one_line(input)
  if #s > 120 then
    s = s:sub(1, 117) .. "..."
  end
  return view.TOOL .. tool .. (s ~= "" and (": " .. s) or "")
end

local function status_mark(state)
  if state.status == "running" then
    return "  …"
  end
  local ms = value(state.elapsedMs)
  local took = ms and string.format(" %.1f s", ms / 1000) or ""
  if state.status == "completed" then
    return "  ✓" .. took
  end
  local kind = value(state.errorKind)
  return "  ✗" .. took .. (kind and (" (" .. kind .. ")") or "")
end

-- How a verify_project call ended, as the footer words need it.
local function check_status(part)
  local state = part.state
  local kind = value(state.errorKind)
  if kind == "denied" or kind == "cancelled" then
    return kind
  end
  local metadata = value(state.metadata)
  local envelope = type(metadata) == "table" and value(metadata.envelope) or nil
  if type(envelope) == "table" and (envelope.status == "passed" or envelope.status == "failed") then
    return envelope.status
  end
  return state.status == "completed" and "passed" or "error"
end

local function tool_event(event)
  local part = event.part
  local header = summary(part.tool, part.state.input) .. status_mark(part.state)
  -- call IDs are the model's and repeat across generations
  local key = tostring(event.generation) .. "/" .. tostring(value(part.callID) or part.id)
  local entry = tools[key]
  view.with_follow(function()
    local row
    if entry == nil then
      row = view.append_transcript({ header })
      entry = { mark = mark_at(row), outputs = 0 }
      tools[key] = entry
    else
      row = row_of(entry.mark)
      view.set_transcript(row, row + 1, { header })
      entry.mark = mark_at(row, entry.mark)
    end
    if event.type == "tool_use" then
      local output = value(part.state.output)
      if output ~= nil and output ~= "" and entry.outputs == 0 then
        local lines = {}
        for _, line in ipairs(lines_of(output)) do
          table.insert(lines, view.OUTPUT .. line)
        end
        view.set_transcript(row + 1, row + 1, lines)
        entry.outputs = #lines
      end
      if part.tool == "verify_project" then
        local status = check_status(part)
        last_check[event.generation] = status
        if status == "failed" then
          view.open_fold(row)
          entry.failed = true
        end
      end
    end
  end)
end

-- The stop line: the verification in the VS Code footer's words, then the counts.
local function finish(event)
  local ended = string.format("stop: %s · %d step%s · %d tool call%s (%d error%s)", event.stopReason, event.steps,
    event.steps == 1 and "" or "s", event.toolCalls, event.toolCalls == 1 and "" or "s", event.toolErrors,
    event.toolErrors == 1 and "" or "s")
  local lines = { string.format("■ %s — %s  (%s)", words.label(event), words.verification(event,
    last_check[event.generation]), ended) }
  local note = words.note(event)
  if note then
    table.insert(lines, note)
  end
  local err = value(event.error)
  if err and err.message then
    table.insert(lines, "✗ " .. one_line(err.message))
  end
  table.insert(lines, "")
  view.with_follow(function()
    view.append_transcript(lines)
  end)
end

function M.event(params)
  local event = params.event
  local t = event.type
  if t == "text_delta" then
    local part = parts[event.partID]
    set_part(event.partID, (part and part.text or "") .. event.delta)
  elseif t == "text" then
    set_part(event.part.id, event.part.text)
  elseif t == "reasoning" then
    M.line("_(thinking)_ " .. one_line(text.first_line(event.part.text)))
  elseif t == "tool_start" or t == "tool_use" then
    tool_event(event)
  elseif t == "notice" then
    M.line("! " .. one_line(event.message))
  elseif t == "error" then
    M.line("✗ " .. one_line(event.error.message))
  elseif t == "run_finish" then
    finish(event)
  end
end

-- Folds of failed checks, opened again in a window that shows the chat anew.
function M.reopen_failed()
  for _, entry in pairs(tools) do
    if entry.failed then
      view.open_fold(row_of(entry.mark))
    end
  end
end

return M
