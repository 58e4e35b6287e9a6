-- The chat buffer (:AgentChat): the conversation as Markdown, the prompt below a separator line,
-- approvals and the queue in between. This module wires the parts: options and keymaps, and the
-- server's notifications (through lua/lsp_agent/bus.lua) to the transcript and the status region.
local bus = require("lsp_agent.bus")
local client = require("lsp_agent.client")
local context = require("lsp_agent.chat.context")
local queue_rows = require("lsp_agent.chat.queue_rows")
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
  M.configured = true
end

local function started(action, what)
  require("lsp_agent").when_started(action, what)
end

local function map_keys(buf)
  local keys = M.options.keys
  queue_rows.keys = keys
  local function map(modes, lhs, rhs, desc)
    vim.keymap.set(modes, lhs, rhs, { buffer = buf, nowait = true, desc = "lsp-agent: " .. desc })
  end
  map("n", keys.send, function()
    started(function() send.send(slash) end, "a chat prompt")
  end, "send the prompt (queued while a run streams)")
  map({ "n", "i" }, keys.steer, function()
    started(function() send.steer(slash) end, "a chat correction")
  end, "steer the prompt into the running generation")
  for name, action in pairs(queue_rows.ACTIONS) do
    map("n", keys[name], function()
      local item, index = queue_rows.item_under_cursor()
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
  if not M.configured then -- opened before the server started: vim.g.lsp_agent's chat options
    M.configure(require("lsp_agent.config").options(state.options).chat)
  end
  context.track(vim.api.nvim_get_current_buf())
  local fresh = not view.valid()
  view.open(M.options)
  if fresh then
    transcript.reset() -- what it knew was about a buffer that is gone
    map_keys(view.chat.buf)
  end
  transcript.reopen_failed()
  started(function() queue_rows.refresh() end, ":AgentChat")
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
