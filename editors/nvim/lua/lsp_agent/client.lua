-- The connection to the server: the running client, requests across Neovim versions, messages.
local state = require("lsp_agent.state")

local M = {}

function M.notify(message, level)
  vim.notify("lsp-agent: " .. message, level or vim.log.levels.INFO)
end

-- The initialized client, or nil (and a warning).
function M.get()
  local c = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if not c or not c.initialized then
    M.notify("the server is not running (yet); call require('lsp_agent').setup()", vim.log.levels.WARN)
    return nil
  end
  return c
end

-- A request to the server (`client:request` on 0.11+, where `client.request` is deprecated).
function M.request(c, method, params, handler)
  if vim.fn.has("nvim-0.11") == 1 then
    return c:request(method, params, handler)
  end
  return c.request(method, params, handler)
end

-- A reply handler that shows a failed request as an error.
function M.on_reply(what)
  return function(err, result)
    if err then
      M.notify(what .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    return result
  end
end

return M
