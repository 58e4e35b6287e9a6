-- The queue rows of the chat: the keymaps on a row (edit, move up/down, steer now, cancel) and
-- reading the queue again after a change the server refused.
local client = require("lsp_agent.client")
local state = require("lsp_agent.state")
local status = require("lsp_agent.chat.status")
local text = require("lsp_agent.text")

local M = { keys = {} } -- keys: the chat's keys, named in the section's header (set by init.lua)

local function request(method, params, on_result)
  local c = client.get()
  if not c then
    return
  end
  client.request(c, method, params, function(err, result)
    if err then
      client.notify(method .. " failed: " .. (err.message or vim.inspect(err))
        .. " (the queue is shown as the server has it)", vim.log.levels.ERROR)
      M.refresh()
      return
    end
    if on_result then
      on_result(result)
    end
  end)
end

function M.refresh()
  if not state.session_id then
    return
  end
  request("agent/queue/list", { sessionID = state.session_id }, function(result)
    state.queue = result.items
    status.set_queue(result.items, M.keys)
  end)
end

local function item_under_cursor()
  local item, index = status.queue_item_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
  if not item then
    client.notify("the cursor is not on a queued row", vim.log.levels.WARN)
  end
  return item, index
end

-- The server moves a row only to the front (sendNow): moving row i up one place is sendNow of row
-- i, then of rows i-2 .. 1 (in that order), which puts them back ahead of it.
local function move_up(index)
  local waiting = status.waiting()
  if index <= 1 then
    return
  end
  if not state.generation then
    client.notify("rows can be reordered while a run streams (now, sending one to the front starts it)",
      vim.log.levels.WARN)
    return
  end
  local order = { waiting[index].id }
  for i = index - 2, 1, -1 do
    table.insert(order, waiting[i].id)
  end
  local function next_one(k)
    if k > #order then
      return M.refresh()
    end
    request("agent/queue/sendNow", { taskID = order[k] }, function()
      next_one(k + 1)
    end)
  end
  next_one(1)
end

M.ACTIONS = {
  queue_cancel = function(item)
    request("agent/queue/cancel", { taskID = item.id })
  end,
  queue_steer = function(item)
    request("agent/queue/steer", { taskID = item.id }, function(result)
      local reason = text.value(result.reason)
      if reason then
        client.notify("not steered: " .. reason, vim.log.levels.WARN)
      end
    end)
  end,
  queue_edit = function(item)
    vim.ui.input({ prompt = "Edit queued message: ", default = item.text }, function(new)
      if new and new ~= "" and new ~= item.text then
        request("agent/queue/edit", { taskID = item.id, text = new, expectedUpdatedAt = item.updatedAt })
      end
    end)
  end,
  queue_up = function(_, index)
    move_up(index)
  end,
  queue_down = function(_, index)
    if index < #status.waiting() then
      move_up(index + 1)
    end
  end,
}

-- The waiting row under the cursor and its index, or nil (said).
M.item_under_cursor = item_under_cursor

return M
