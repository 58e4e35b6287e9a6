-- The server-to-client methods the plugin answers, gathered from the modules that own them; after
-- its owner, each one is passed to the listeners of lua/lsp_agent/bus.lua (the chat buffer).
local bus = require("lsp_agent.bus")

local handlers = {}
for _, name in ipairs({ "events", "queue", "run", "steering", "approval", "trust", "documents", "runstate",
                           "editor_queries" }) do
  for method, handler in pairs(require("lsp_agent." .. name).handlers) do
    assert(handlers[method] == nil, "two handlers for " .. method)
    handlers[method] = function(err, params, ctx, config)
      local result, failure = handler(err, params, ctx, config)
      if params ~= nil and method ~= "agent/requestApproval" and method ~= "agent/editorQuery" then
        bus.emit(method, params)
      end
      return result, failure
    end
  end
end
return handlers
