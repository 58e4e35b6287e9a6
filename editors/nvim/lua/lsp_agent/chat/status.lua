-- The status region of the chat, between the transcript and the prompt: an approval question
-- while the server waits for one, and the queue's waiting rows. Rows are remembered by line, so
-- a keymap on a line knows which choice or queue row it is on.
local text = require("lsp_agent.text")
local view = require("lsp_agent.chat.view")

local M = {}

local approval = nil  -- { lines, choices = { {id, label} }, first_choice_row (offset) }
local queue_rows = {} -- offset within the region -> queue item
local waiting = {}    -- the queue's waiting rows, in run order

local LABELS = { allow_once = "Allow once", allow_session = "Allow for this session", deny = "Deny" }

function M.label(option, scope)
  if option == "allow_session" and type(scope) == "string" and scope ~= "" then
    return LABELS.allow_session .. ": " .. text.one_line(scope)
  end
  return LABELS[option] or option
end

local function render(keys)
  if not view.valid() then
    return
  end
  local lines = {}
  local choice_offset = nil
  if approval then
    for _, line in ipairs(approval.lines) do
      table.insert(lines, line)
    end
    choice_offset = #lines
    for i, choice in ipairs(approval.choices) do
      table.insert(lines, string.format("  [%d] %s", i, choice.label))
    end
    table.insert(lines, "")
  end
  queue_rows = {}
  if #waiting > 0 then
    table.insert(lines, string.format("Queue (%s edit · %s/%s move · %s steer now · %s cancel):", keys.queue_edit,
      keys.queue_up, keys.queue_down, keys.queue_steer, keys.queue_cancel))
    for i, item in ipairs(waiting) do
      queue_rows[#lines] = item
      table.insert(lines, string.format("  %d. %-7s %s%s", i, item.status, text.one_line(text.first_line(item.text)),
        (item.attachments and #item.attachments > 0) and ("  (" .. #item.attachments .. " attachment(s))") or ""))
    end
    table.insert(lines, "")
  end
  local first = view.set_status(lines)
  if approval then
    approval.first_choice_row = first + choice_offset
  end
end

-- The approval block: the exact command, why, and each numbered choice with its scope.
function M.show_approval(params, options, keys)
  local what = vim.split(tostring(params.what), "\n", { plain = true })
  local lines = { string.format("**Approve %s?** (%s) — 1-%d or <CR> on a choice", params.tool,
    text.one_line(params.why), #options), "```" }
  for _, line in ipairs(what) do
    table.insert(lines, text.one_line(line))
  end
  table.insert(lines, "```")
  local choices = {}
  for _, option in ipairs(options) do
    table.insert(choices, { id = option, label = M.label(option, text.value(params.sessionScope)) })
  end
  approval = { lines = lines, choices = choices }
  render(keys)
  return approval
end

function M.clear_approval(keys)
  approval = nil
  render(keys)
end

-- The choice on 0-based `row`, when the approval block shows one there.
function M.choice_at(row)
  if not approval or not approval.first_choice_row then
    return nil
  end
  local choice = approval.choices[row - approval.first_choice_row + 1]
  return choice and choice.id or nil
end

function M.approval_choice_rows()
  if not approval then
    return nil
  end
  return approval.first_choice_row, approval.first_choice_row + #approval.choices - 1
end

function M.set_queue(items, keys)
  waiting = {}
  for _, item in ipairs(items or {}) do
    if item.status == "queued" or item.status == "paused" then
      table.insert(waiting, item)
    end
  end
  render(keys)
end

function M.waiting()
  return waiting
end

-- The queue row on 0-based `row` and its index among the waiting rows, or nil.
function M.queue_item_at(row)
  local item = queue_rows[row - view.status_first()]
  if not item then
    return nil
  end
  for i, w in ipairs(waiting) do
    if w.id == item.id then
      return item, i
    end
  end
  return nil
end

return M
