-- The chat's slash commands, the same as VS Code's: /new, /compact, /model, /mode, /rewind.
local client = require("lsp_agent.client")
local state = require("lsp_agent.state")
local transcript = require("lsp_agent.chat.transcript")

local M = {}

M.NAMES = { "/new", "/compact", "/model", "/mode", "/rewind" }

local function request(method, params, on_result)
  local c = client.get()
  if not c then
    return
  end
  client.request(c, method, params, function(err, result)
    if err then
      client.on_reply(method)(err)
      return
    end
    on_result(result)
  end)
end

local COMMANDS = {}

COMMANDS["/new"] = function()
  require("lsp_agent.run").new_session()
  transcript.line("── new session ──")
  transcript.line("")
  return true
end

COMMANDS["/compact"] = function()
  if not state.session_id then
    client.notify("/compact: no session yet", vim.log.levels.WARN)
    return false
  end
  request("agent/compact", { sessionID = state.session_id }, function(result)
    transcript.line("_compact:_ " .. result.status .. " · " .. result.message)
  end)
  return true
end

local function use_model(name)
  require("lsp_agent.chat.send").model = name
  transcript.line("_model:_ " .. name .. " (for the runs this chat starts)")
end

COMMANDS["/model"] = function(arg)
  if arg ~= "" then
    use_model(arg)
    return true
  end
  request("agent/models", {}, function(result)
    local names = vim.tbl_map(function(m) return m.name end, result.models or {})
    vim.ui.select(names, { prompt = "Model (now " .. tostring(result.current) .. ")" }, function(choice)
      if choice then
        use_model(choice)
      end
    end)
  end)
  return true
end

COMMANDS["/mode"] = function(arg)
  local function switch(mode)
    request("agent/mode", { mode = mode }, function(result)
      transcript.line("_mode:_ " .. result.mode)
    end)
  end
  if arg ~= "" then
    switch(arg)
    return true
  end
  request("agent/mode", vim.empty_dict(), function(result)
    local ids = vim.tbl_map(function(m) return m.id end, result.modes or {})
    vim.ui.select(ids, { prompt = "Mode (now " .. result.mode .. ")" }, function(choice)
      if choice then
        switch(choice)
      end
    end)
  end)
  return true
end

COMMANDS["/rewind"] = function(arg)
  if vim.fn.exists(":AgentRewind") == 2 then
    vim.cmd("AgentRewind" .. (arg ~= "" and (" " .. arg) or ""))
    return true
  end
  client.notify("/rewind is not available: this plugin has no :AgentRewind", vim.log.levels.WARN)
  return false
end

-- Runs a `/name args` prompt; true when it was taken (the prompt is then cleared).
function M.run(prompt)
  local name, arg = prompt:match("^(/%S+)%s*(.-)%s*$")
  local command = COMMANDS[name]
  if not command then
    client.notify(string.format("unknown command %s (known: %s); the prompt is kept", tostring(name),
      table.concat(M.NAMES, ", ")), vim.log.levels.WARN)
    return false
  end
  return command(arg)
end

return M
