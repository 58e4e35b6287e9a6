-- The language servers running beside lsp-agent in Neovim: which are attached to a buffer, which
-- answer a method, and asking them with a deadline, across Neovim versions (0.11 made the client's
-- functions methods).
local state = require("lsp_agent.state")

local M = {}

local function recent()
  return vim.fn.has("nvim-0.11") == 1
end

function M.now_ms()
  return vim.loop.hrtime() / 1e6
end

local function clients_of(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients(bufnr and { bufnr = bufnr } or nil)
  end
  if bufnr == nil then
    return vim.lsp.get_active_clients()
  end
  return vim.tbl_values(vim.lsp.buf_get_clients(bufnr))
end

local function is_agent(c)
  return c.id == state.client_id or c.name == "lsp-agent"
end

-- The other language servers: attached to `bufnr` (or any, for nil), in a stable order.
function M.others(bufnr)
  local found = {}
  for _, c in ipairs(clients_of(bufnr)) do
    if not is_agent(c) then
      table.insert(found, c)
    end
  end
  table.sort(found, function(a, b)
    return a.id < b.id
  end)
  return found
end

-- The names of the other language servers attached to `bufnr` (nil: running at all).
function M.names(bufnr)
  local names = {}
  for _, c in ipairs(M.others(bufnr)) do
    table.insert(names, c.name)
  end
  return names
end

-- Whether `c` (initialized) answers `method`, statically or by a registration.
function M.supports(c, method, bufnr)
  if not c.initialized then
    return false
  end
  if recent() then
    return c:supports_method(method, bufnr)
  end
  return c.supports_method(method)
end

-- The position encoding `c` negotiated with Neovim.
function M.encoding_of(c)
  return c.offset_encoding or "utf-16"
end

local function send(c, method, params, bufnr, on_reply)
  if recent() then
    return c:request(method, params, on_reply, bufnr)
  end
  return c.request(method, params, on_reply, bufnr)
end

local function cancel(c, id)
  if recent() then
    c:cancel_request(id)
  else
    c.cancel_request(id)
  end
end

-- `method` sent to each client (`params_for(client)`: the params in its encoding), waiting until
-- all replied or `deadline`; a client that has not replied by then is cancelled. Returns the
-- replies ({ client, result }) and what went wrong with the others.
function M.ask(clients, method, params_for, bufnr, deadline)
  local replies, sent = {}, {}
  for _, c in ipairs(clients) do
    local ok, id = send(c, method, params_for(c), bufnr, function(err, result)
      replies[c.id] = { err = err, result = result }
    end)
    sent[c.id] = ok and id or nil
  end
  vim.wait(math.max(0, deadline - M.now_ms()), function()
    for id in pairs(sent) do
      if replies[id] == nil then
        return false
      end
    end
    return true
  end, 10)
  local answered, problems = {}, {}
  for _, c in ipairs(clients) do
    local reply = replies[c.id]
    if reply == nil and sent[c.id] then
      cancel(c, sent[c.id])
      table.insert(problems, string.format("%s did not answer %s in time", c.name, method))
    elseif reply == nil then
      table.insert(problems, string.format("%s could not be asked %s", c.name, method))
    elseif reply.err then
      table.insert(problems, string.format("%s: %s", c.name, reply.err.message or vim.inspect(reply.err)))
    else
      table.insert(answered, { client = c, result = reply.result })
    end
  end
  return answered, problems
end

return M
