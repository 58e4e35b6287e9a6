-- The server-to-client methods the plugin answers, gathered from the modules that own them.
local handlers = {}
for _, name in ipairs({ "events", "queue", "run", "steering", "approval", "trust", "documents", "runstate" }) do
  for method, handler in pairs(require("lsp_agent." .. name).handlers) do
    assert(handlers[method] == nil, "two handlers for " .. method)
    handlers[method] = handler
  end
end
return handlers
