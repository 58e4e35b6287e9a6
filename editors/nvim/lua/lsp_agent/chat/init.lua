-- The chat buffer (:AgentChat): the conversation as Markdown, the prompt below a separator line,
-- approvals and the queue in between. This module wires the parts: options and keymaps, and the
-- server's notifications (through lua/lsp_agent/bus.lua) to the transcript and the status region.
local bus = require("lsp_agent.bus")
local client = require("lsp_agent.client")
local context = require("lsp_agent.chat.context")
local slash = require("lsp_agent.chat.slash")
local send = require("lsp_agent.chat.send")
local state = require("lsp_agent.state")
local status = require("lsp_agent.chat.status")
local text = require("lsp_agent.text")
local transcript = require("lsp_agent.chat.transcript")
local view = require("lsp_agent.chat.view")

local M = {}

M.DEFAULTS = {
  layout = "vertical", -- "vertical" (a split on the right), "horizontal" (at the bottom) or "float"
  keys = {
    send = "<CR>",     -- normal mode: send the prompt (queued while a run streams)
    steer = "<C-s>",   -- insert and normal mode: steer the prompt into the running generation
    queue_edit = "qe", queue_up = "qk", queue_down = "qj", queue_steer = "qs", queue_cancel = "qd",
  },
}

M.options = vim.deepcopy(M.DEFAULTS)

-- The chat's options: setup({ chat = { layout = ..., keys = { ... } } }).
function M.configure(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.DEFAULTS), opts or {})
end

local function started(action, what)
  require("lsp_agent").when_started(action, what)
end

local function request(method, params, on_result)
  local c = client.get()
  if not c then
    return
  end
  client.request(c, method, params, function(err, result)
    if err then
      client.notify(method .. " failed: " .. (err.message or vim.inspect(err))
        .. " (the queue is shown as the server has it)", vim.log.levels.ERROR)
      M.refresh_queue()
      return
    end
    if on_result then
      on_result(result)
    end
  end)
end

function M.refresh_queue()
  if not state.session_id then
    return
  end
  request("agent/queue/list", { sessionID = state.session_id }, function(result)
    state.queue = result.items
    status.set_queue(result.items, M.options.keys)
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
      return M.refresh_queue()
    end
    request("agent/queue/sendNow", { taskID = order[k] }, function()
      next_one(k + 1)
    end)
  end
  next_one(1)
end

local QUEUE_ACTIONS = {
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

local function map_keys(buf)
  local keys = M.options.keys
  local function map(modes, lhs, rhs, desc)
    vim.keymap.set(modes, lhs, rhs, { buffer = buf, nowait = true, desc = "lsp-agent: " .. desc })
  end
  map("n", keys.send, function()
    started(function() send.send(slash) end, "a chat prompt")
  end, "send the prompt (queued while a run streams)")
  map({ "n", "i" }, keys.steer, function()
    started(function() send.steer(slash) end, "a chat correction")
  end, "steer the prompt into the running generation")
  for name, action in pairs(QUEUE_ACTIONS) do
    map("n", keys[name], function()
      local item, index = item_under_cursor()
      if item then
        started(function() action(item, index) end, "a queue action")
      end
    end, (name:gsub("_", " ")))
  end
  vim.api.nvim_buf_set_option(buf, "omnifunc", "v:lua.require'lsp_agent.chat.context'.omnifunc")
end

local wired = false

local function wire()
  if wired then
    return
  end
  wired = true
  bus.on("announce", function(p)
    if view.valid() then
      transcript.user(p.prompt)
    end
  end)
  bus.on("agent/event", function(p)
    if view.valid() then
      transcript.event(p)
    end
  end)
  bus.on("agent/receipt", function(p)
    if view.valid() then
      local reason = text.value(p.receipt.reason)
      transcript.line("_correction " .. p.receipt.status .. (reason and (" (" .. reason .. ")") or "") .. "_")
    end
  end)
  bus.on("agent/queueChanged", function(p)
    if view.valid() and p.sessionID == state.session_id then
      status.set_queue(p.items, M.options.keys)
    end
  end)
  local group = vim.api.nvim_create_augroup("lsp_agent_chat", { clear = true })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    callback = function(args)
      context.track(args.buf)
    end,
  })
end

-- Opens the chat, or closes its windows when it is open. The server starts in the background.
function M.toggle()
  wire()
  if view.is_open() then
    view.close()
    return
  end
  context.track(vim.api.nvim_get_current_buf())
  local fresh = not view.valid()
  view.open(M.options)
  if fresh then
    transcript.reset() -- what it knew was about a buffer that is gone
    map_keys(view.chat.buf)
  end
  transcript.reopen_failed()
  started(function() M.refresh_queue() end, ":AgentChat")
end

function M.is_open()
  return view.is_open()
end

-- The approval question in the chat when a window shows it; nil: ask elsewhere.
function M.ask_approval(params, options)
  if not view.is_open() then
    return nil
  end
  return require("lsp_agent.chat.approval").ask(params, options, M.options.keys)
end

-- :AgentChatAdd over a range: the lines become #selection, and the token goes into the prompt.
function M.add_selection(first, last)
  wire()
  local buf = vim.api.nvim_get_current_buf()
  if view.valid() and buf == view.chat.buf then
    client.notify("select lines in a file buffer, not in the chat", vim.log.levels.WARN)
    return
  end
  context.set_selection(buf, first, last)
  context.track(buf)
  if not view.is_open() then
    M.toggle()
  end
  if not view.prompt_text():find("#selection", 1, true) then
    view.add_to_prompt("#selection")
  end
end

return M
