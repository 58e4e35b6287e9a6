-- lsp-agent for Neovim 0.7+: a coding agent served as a language server, driven from Neovim's
-- built-in LSP client.
--
--   require("lsp_agent").setup({ init_options = { model = "ollama/qwen2.5-coder" } })  -- optional
--
-- Without setup(), the first :Agent command starts the server with vim.g.lsp_agent (or defaults).
-- The server is `lsp-agent` on PATH, or `python = "/path/venv/bin/python"`, or `cmd = { ... }`.
-- See :help lsp_agent; :checkhealth lsp_agent says what is missing.
--
-- The fields of the table this module returns (client_id, session_id, generation, last_finish,
-- events_buf, queue, ...) are the plugin's state (lua/lsp_agent/state.lua), read and written
-- through it.
local client = require("lsp_agent.client")
local config = require("lsp_agent.config")
local events = require("lsp_agent.events")
local lsp = require("lsp_agent.lsp")
local mcp = require("lsp_agent.mcp")
local queue = require("lsp_agent.queue")
local run = require("lsp_agent.run")
local state = require("lsp_agent.state")
local steering = require("lsp_agent.steering")
local trust = require("lsp_agent.trust")

local M = {
  version = require("lsp_agent.version"),
  cancel = run.cancel,
  new_session = run.new_session,
  show_queue = queue.show,
  steer_now = steering.steer_now,
  statusline = require("lsp_agent.runstate").statusline,
  review = function(path)
    require("lsp_agent.review").review(path)
  end,
  show_events = events.show,
  show_mcp = mcp.show,
  mcp_lines = mcp.lines,
  trust_lines = trust.lines,
  trust_command = trust.command,
  find_root = config.find_root,
  -- the chat buffer, loaded on first use
  chat = function() require("lsp_agent.chat").toggle() end,
}

-- Commands typed before the server answered `initialize` ({ run = fn, what = the command line }),
-- run once it has.
local pending = {}

local function flush_pending()
  local waiting = pending
  pending = {}
  for _, entry in ipairs(waiting) do
    entry.run()
  end
end

-- A server that exits before it is ready runs none of them: say which, so nothing typed is lost
-- without a word.
local function drop_pending(code)
  if #pending == 0 then
    return
  end
  local lines = {}
  for _, entry in ipairs(pending) do
    table.insert(lines, entry.what)
  end
  pending = {}
  client.notify(string.format("the server exited (code %s) before it was ready; not run: %s (:checkhealth lsp_agent)",
    tostring(code), table.concat(lines, "; ")), vim.log.levels.ERROR)
end

-- The entries that take what the user typed wait for a server that is still starting (and start
-- one when none runs), so a prompt given from Lua is never dropped either.
function M.run(prompt)
  return M.when_started(function()
    run.run(prompt)
  end, "run: " .. tostring(prompt))
end

function M.steer(correction)
  return M.when_started(function()
    steering.steer(correction)
  end, "steer: " .. tostring(correction))
end

function M.queue_add(message)
  return M.when_started(function()
    queue.add(message)
  end, "queue: " .. tostring(message))
end

-- Starts the server for the workspace (options: :help lsp_agent-options); returns the client id,
-- or nil when there is no workspace or no server (said with vim.notify).
function M.setup(opts)
  opts = opts or {}
  state.options, state.options_from = opts, state.starting_from or "setup()"
  state.root_markers = opts.root_markers or state.root_markers
  if opts.chat ~= nil then
    require("lsp_agent.chat").configure(opts.chat)
  end
  if opts.progress ~= nil then
    state.show_progress = opts.progress
  end
  local root = opts.root_dir
  if root == nil then
    root = config.find_root(config.search_start(), state.root_markers)
    if root == nil then
      client.notify("no workspace: none of " .. table.concat(state.root_markers, ", ") .. " above "
        .. config.search_start() .. "; not started (create .lsp-agent/ in the project, or pass root_dir to setup)",
        vim.log.levels.WARN)
      return nil
    end
  end
  root = vim.fn.fnamemodify(root, ":p"):gsub("/$", "")
  if root == "" then
    root = "/"
  end
  state.root = root
  local cmd, why = config.server_command(opts)
  if not cmd then
    client.notify("not started: " .. why .. " (:checkhealth lsp_agent)", vim.log.levels.ERROR)
    return nil
  end
  local editor_queries = require("lsp_agent.editor_queries")
  editor_queries.configure(opts)
  local lsp_config = {
    name = "lsp-agent",
    cmd = cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = lsp.object(opts.init_options),
    settings = { lspAgent = lsp.object(opts.settings) },
    handlers = require("lsp_agent.handlers"),
    capabilities = editor_queries.capabilities(opts.editor_queries),
    flags = opts.flags or {},
    on_init = function()
      vim.schedule(flush_pending)
    end,
    on_exit = function(code)
      vim.schedule(function()
        drop_pending(code)
      end)
    end,
  }
  state.client_id = lsp.start(lsp_config, root)
  if not state.client_id then
    client.notify("could not start " .. table.concat(cmd, " "), vim.log.levels.ERROR)
    return nil
  end
  lsp.attach_buffers(state.client_id, root)
  require("lsp_agent.commands").define()
  return state.client_id
end

-- Runs `action` once the server is up: at once when it is, after `initialize` when it is starting;
-- with no server yet, starts it first (with the last setup() options, else vim.g.lsp_agent).
-- `what` names the action (the command line) if the server never gets ready.
function M.when_started(action, what)
  local c = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if c and c.initialized then
    return action()
  end
  if not c then
    local opts = state.options
    state.starting_from = state.options_from -- a restart keeps saying where its options came from
    if opts == nil then
      opts = config.options(nil)
      state.starting_from = type(vim.g.lsp_agent) == "table" and "vim.g.lsp_agent" or "defaults (setup() not called)"
    end
    local started = M.setup(opts)
    state.starting_from = nil
    if not started then
      return nil
    end
  end
  table.insert(pending, { run = action, what = what or "a command" })
end

return setmetatable(M, {
  __index = state,
  __newindex = function(_, key, value)
    state[key] = value
  end,
})
