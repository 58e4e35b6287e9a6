-- Listeners for what the server sends, beside the one handler that owns each method: the chat
-- buffer follows the same notifications the events buffer does without a second handler.
local M = { listeners = {} }

function M.on(topic, listener)
  M.listeners[topic] = M.listeners[topic] or {}
  table.insert(M.listeners[topic], listener)
end

-- A failing listener is reported, never allowed to break the handler that emitted.
function M.emit(topic, payload)
  for _, listener in ipairs(M.listeners[topic] or {}) do
    local ok, err = pcall(listener, payload)
    if not ok then
      vim.schedule(function()
        vim.notify("lsp-agent: " .. topic .. " listener failed: " .. tostring(err), vim.log.levels.ERROR)
      end)
    end
  end
end

return M
