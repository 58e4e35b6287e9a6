-- lsp-agent for Neovim 0.7+ (uses vim.lsp.start where it exists, vim.lsp.start_client otherwise).
--
--   local agent = require("lsp_agent")      -- this file on 'runtimepath' as lua/lsp_agent.lua
--   agent.setup({ init_options = { model = "ollama/qwen2.5-coder" } })
--
-- Commands: :AgentRun {prompt}  :AgentSteer {text}  :AgentCancel  :AgentEvents  :AgentNew
-- Events stream into the scratch buffer `lsp-agent://events`; edits arrive as workspace/applyEdit
-- (built in, with undo); before a check the server asks to save the buffers it edited
-- (agent/saveDocuments), answered here with :write.

local M = {
  client_id = nil,
  session_id = nil,   -- the conversation :AgentRun continues (:AgentNew starts another)
  generation = nil,   -- the running generation, if any
  last_finish = nil,  -- the last run_finish event
  events_buf = nil,
}

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

-- events ---------------------------------------------------------------------------------------

local function events_buffer()
  if M.events_buf and vim.api.nvim_buf_is_valid(M.events_buf) then
    return M.events_buf
  end
  M.events_buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(M.events_buf, "lsp-agent://events")
  return M.events_buf
end

local function append(text)
  local buf = events_buffer()
  local lines = vim.split(text, "\n", { plain = true })
  local count = vim.api.nvim_buf_line_count(buf)
  local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
  if count == 1 and first == "" then
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, lines)
  else
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
  end
end

local function first_line(text)
  return (tostring(text or ""):gsub("\n.*", ""))
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
    return string.format("-- stop: %s · verification: %s · steps %d · files changed: %s", event.stopReason,
      event.verification, event.steps, table.concat(event.filesChanged or {}, ", "))
  end
  return nil -- text/reasoning deltas: the full text follows in one piece
end

local handlers = {}

handlers["agent/event"] = function(_, params, _)
  local event = params.event
  if event.type == "run_finish" then
    M.last_finish = event
    if M.generation == params.generation then
      M.generation = nil
    end
  end
  local line = describe(event)
  if line then
    append(line)
  end
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

-- commands -------------------------------------------------------------------------------------

local function on_reply(what)
  return function(err, result)
    if err then
      notify(what .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    return result
  end
end

function M.run(prompt)
  local c = client()
  if not c then
    return
  end
  local params = { prompt = prompt, sessionID = M.session_id }
  c.request("agent/run", params, function(err, result)
    if err then
      on_reply("agent/run")(err)
      return
    end
    M.session_id, M.generation = result.sessionID, result.generation
    append("== " .. prompt)
  end)
end

function M.steer(text)
  local c = client()
  if not c or not M.session_id then
    notify("nothing to steer: no session yet", vim.log.levels.WARN)
    return
  end
  -- agent/steer arrives with the steering feature; an older server answers MethodNotFound.
  c.request("agent/steer", { sessionID = M.session_id, expectedGeneration = M.generation, text = text },
    on_reply("agent/steer"))
end

function M.cancel()
  local c = client()
  if c and M.session_id then
    c.request("agent/cancel", { sessionID = M.session_id }, on_reply("agent/cancel"))
  end
end

function M.show_events()
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, events_buffer())
end

-- setup ----------------------------------------------------------------------------------------

local function under(root, name)
  return name ~= "" and name:sub(1, #root + 1) == root .. "/"
end

function M.setup(opts)
  opts = opts or {}
  local root = vim.fn.fnamemodify(opts.root_dir or vim.loop.cwd(), ":p"):gsub("/$", "")
  local config = {
    name = "lsp-agent",
    cmd = opts.cmd or { "lsp-agent", "serve" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = opts.init_options or vim.empty_dict(),
    settings = { lspAgent = opts.settings or vim.empty_dict() },
    handlers = handlers,
    flags = opts.flags or {},
  }
  if vim.lsp.start then
    M.client_id = vim.lsp.start(config)
  else
    M.client_id = vim.lsp.start_client(config)
  end
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
  vim.api.nvim_create_user_command("AgentCancel", function() M.cancel() end, { nargs = 0 })
  vim.api.nvim_create_user_command("AgentEvents", function() M.show_events() end, { nargs = 0 })
  vim.api.nvim_create_user_command("AgentNew", function() M.session_id = nil end, { nargs = 0 })
  return M.client_id
end

return M
