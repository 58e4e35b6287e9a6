-- The configured MCP servers (agent/mcp/list, started first) in the scratch buffer lsp-agent://mcp.
local client = require("lsp_agent.client")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")
local ui = require("lsp_agent.ui")

local first_line, value = text.first_line, text.value

local M = {}

-- One line per server, then its tools.
function M.lines(list)
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

function M.show()
  local c = client.get()
  if not c then
    return
  end
  client.request(c, "agent/mcp/list", { start = true }, function(err, result)
    if err then
      client.on_reply("agent/mcp/list")(err)
      return
    end
    state.mcp_buf = ui.scratch(state.mcp_buf, "lsp-agent://mcp")
    vim.api.nvim_buf_set_lines(state.mcp_buf, 0, -1, false, M.lines(result))
    ui.show_at_bottom(state.mcp_buf)
  end)
end

return M
