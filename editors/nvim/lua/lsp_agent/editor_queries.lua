-- agent/editorQuery: the server asks what the editor's own language servers know (definitions,
-- references, hover, symbols, diagnostics) for the model's editor-query tools. Neovim answers by
-- asking the OTHER clients attached to the document (never lsp-agent itself), each in its own
-- position encoding, and its diagnostics with vim.diagnostic.get.
--
-- Neovim answers a server's request from the handler's return value, so the handler waits for the
-- other servers on the event loop (vim.wait), bounded a little below the server's own per-query
-- timeout: a language server that hangs costs the user that much, never more.
local answers = require("lsp_agent.editor_answers")
local clients = require("lsp_agent.other_clients")
local positions = require("lsp_agent.positions")
local state = require("lsp_agent.state")

local M = { handlers = {} }

-- Every kind the plugin answers, in the protocol's order.
M.KINDS = { "definition", "references", "hover", "documentSymbols", "workspaceSymbols", "diagnostics",
            "typeDefinition", "implementation", "callHierarchy" }

local METHOD = {
  definition = "textDocument/definition",
  references = "textDocument/references",
  hover = "textDocument/hover",
  documentSymbols = "textDocument/documentSymbol",
  workspaceSymbols = "workspace/symbol",
  typeDefinition = "textDocument/typeDefinition",
  implementation = "textDocument/implementation",
  callHierarchy = "textDocument/prepareCallHierarchy",
}

local UTF16 = "utf-16"
local DEFAULT_TIMEOUT_S = 5 -- the server's editorQueries.timeoutS default

-- The kinds to declare for the `editor_queries` option: true or nil (every kind), false (none), or
-- a list of kinds (those of them the plugin knows).
function M.kinds(option)
  if option == false then
    return {}
  end
  if type(option) ~= "table" then
    return vim.deepcopy(M.KINDS)
  end
  local wanted = {}
  for _, kind in ipairs(option) do
    wanted[kind] = true
  end
  local kinds = {}
  for _, kind in ipairs(M.KINDS) do
    if wanted[kind] then
      table.insert(kinds, kind)
    end
  end
  return kinds
end

-- The client capabilities sent in `initialize`: Neovim's own, plus the editor-query kinds.
function M.capabilities(option)
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  local kinds = M.kinds(option)
  if #kinds > 0 then
    capabilities.experimental = { lspAgent = { editorQueries = kinds } }
  end
  return capabilities
end

-- How long one answer may take: 90% of the server's timeout (from the options' init_options or
-- settings), so the answer arrives before the server gives up on it.
function M.wait_ms(opts)
  local timeout_s = DEFAULT_TIMEOUT_S
  for _, section in ipairs({ opts.init_options, opts.settings }) do
    local queries = type(section) == "table" and section.editorQueries
    if type(queries) == "table" and type(queries.timeoutS) == "number" and queries.timeoutS > 0 then
      timeout_s = queries.timeoutS
    end
  end
  return math.floor(timeout_s * 900)
end

-- Called by setup(): what this client declares and how long it may take to answer.
function M.configure(opts)
  state.editor_queries = M.kinds(opts.editor_queries)
  state.editor_query_wait_ms = M.wait_ms(opts)
end

-- An error answer the server classifies by `data.kind`.
local function refuse(kind, message)
  local codes = vim.lsp.protocol.ErrorCodes
  return nil, vim.lsp.rpc.rpc_response_error(codes.RequestFailed or codes.InternalError, message, { kind = kind })
end

-- For :checkhealth: the names of the other language servers attached to a buffer (nil: all).
M.other_servers = clients.names

-- Buffers a query loaded, given back when it is answered (see the handler).
local loaded_here = {}

-- The buffer of `uri`, loaded (which starts the language servers configured for its filetype).
local function document(uri)
  local bufnr = vim.uri_to_bufnr(uri)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    vim.fn.bufload(bufnr)
    loaded_here[bufnr] = true
  end
  return bufnr
end

local function filetype_of(bufnr)
  local filetype = vim.api.nvim_buf_get_option(bufnr, "filetype")
  return filetype ~= "" and filetype or "this file type"
end

-- The other clients of `bufnr` that answer `method`, waiting (until `deadline`) for any that is
-- still starting. nil and the refusal when there are none.
local function answering(bufnr, method, deadline)
  local function ready()
    local ready_ones, starting = {}, false
    for _, c in ipairs(clients.others(bufnr)) do
      if clients.supports(c, method, bufnr) then
        table.insert(ready_ones, c)
      elseif not c.initialized then
        starting = true
      end
    end
    return ready_ones, starting
  end
  local found, starting = ready()
  if #found == 0 and starting then
    vim.wait(math.max(0, deadline - clients.now_ms()), function()
      found, starting = ready()
      return #found > 0 or not starting
    end, 20)
  end
  if #found > 0 then
    return found
  end
  if bufnr == nil then
    return nil, { "noLanguageServer", "no language server running in Neovim answers " .. method }
  end
  if #clients.others(bufnr) == 0 then
    return nil, { "noLanguageServer", "no language server is attached in Neovim for " .. filetype_of(bufnr) }
  end
  return nil, { "notSupported", "the language servers attached for " .. filetype_of(bufnr) .. " do not answer "
    .. method }
end

-- Asks the clients of `bufnr` (nil: every client) and turns their replies into the answer with
-- `collect(replies, cache)`; an error when none could answer.
local function query(bufnr, method, params_for, deadline, collect)
  local servers, refusal = answering(bufnr, method, deadline)
  if not servers then
    return refuse(refusal[1], refusal[2])
  end
  local replies, problems = clients.ask(servers, method, params_for, bufnr, deadline)
  if #replies == 0 then
    return refuse("failed", table.concat(problems, "; "))
  end
  return collect(replies, {})
end

local function at_position(uri, position, extra)
  local cache = {}
  return function(c)
    local params = { textDocument = { uri = uri },
                     position = positions.position(uri, position, UTF16, clients.encoding_of(c), cache) }
    return vim.tbl_extend("force", params, extra or {})
  end
end

local function locations(replies, cache)
  local out, seen = {}, {}
  for _, reply in ipairs(replies) do
    answers.locations(reply.result, clients.encoding_of(reply.client), cache, out, seen)
  end
  return { locations = out }
end

local function hover(replies)
  local parts, kind = {}, "markdown"
  for _, reply in ipairs(replies) do
    local text, its_kind = answers.hover(reply.result)
    if text then
      table.insert(parts, text)
      kind = #parts == 1 and its_kind or "markdown"
    end
  end
  if #parts == 0 then
    return { contents = vim.NIL }
  end
  return { contents = { kind = kind, value = table.concat(parts, "\n\n---\n\n") } }
end

-- The diagnostics the plugin's own server published (its checks) are not the editor's.
local function own_namespaces()
  local own = {}
  if state.client_id then
    own[vim.lsp.diagnostic.get_namespace(state.client_id)] = true
    if vim.fn.has("nvim-0.10") == 1 then
      own[vim.lsp.diagnostic.get_namespace(state.client_id, true)] = true
    end
  end
  return own
end

local function diagnostics_of(bufnr, own)
  local items = {}
  for _, item in ipairs(vim.diagnostic.get(bufnr)) do
    if not own[item.namespace] then
      table.insert(items, item)
    end
  end
  table.sort(items, function(a, b)
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    if a.col ~= b.col then
      return a.col < b.col
    end
    return tostring(a.message) < tostring(b.message)
  end)
  return answers.diagnostics(bufnr, items)
end

-- Diagnostics of one document (what its loaded buffer has; none when it is not loaded), or of every
-- loaded file buffer that has any.
local function diagnostics(uri)
  local own = own_namespaces()
  if uri then
    -- Not loaded for this: a language server says nothing of a file in the moment it is loaded, and
    -- a buffer left loaded would keep the agent's next edit of that file unsaved in it.
    local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
    local found = bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) and diagnostics_of(bufnr, own) or {}
    return { diagnostics = { { uri = uri, diagnostics = found } } }
  end
  local per_document = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_option(bufnr, "buftype") == ""
        and vim.api.nvim_buf_get_name(bufnr) ~= "" then
      local found = diagnostics_of(bufnr, own)
      if #found > 0 then
        table.insert(per_document, { uri = vim.uri_from_bufnr(bufnr), diagnostics = found })
      end
    end
  end
  table.sort(per_document, function(a, b)
    return a.uri < b.uri
  end)
  return { diagnostics = per_document }
end

-- The incoming calls of the items prepared at the position, asked of the server that prepared them.
local function call_hierarchy(uri, position, bufnr, deadline)
  local method = "callHierarchy/incomingCalls"
  return query(bufnr, METHOD.callHierarchy, at_position(uri, position), deadline, function(replies, cache)
    local calls = {}
    for _, reply in ipairs(replies) do
      for _, item in ipairs(type(reply.result) == "table" and reply.result or {}) do
        local incoming, problems = clients.ask({ reply.client }, method, function()
          return { item = item }
        end, bufnr, deadline)
        if #incoming == 0 then
          return refuse("failed", table.concat(problems, "; "))
        end
        answers.incoming_calls(incoming[1].result, clients.encoding_of(reply.client), cache, calls)
      end
    end
    return { calls = calls }
  end)
end

local function answer(params, deadline)
  local kind, uri, position = params.kind, params.uri, params.position
  if not vim.tbl_contains(state.editor_queries or {}, kind) then
    return refuse("notSupported", "Neovim does not answer " .. tostring(kind) .. " queries (editor_queries option)")
  end
  if kind == "diagnostics" then
    return diagnostics(type(uri) == "string" and uri or nil)
  end
  if kind == "workspaceSymbols" then
    return query(nil, METHOD.workspaceSymbols, function()
      return { query = type(params.query) == "string" and params.query or "" }
    end, deadline, function(replies, cache)
      local collected = { list = {} }
      for _, reply in ipairs(replies) do
        answers.symbols(reply.result, nil, clients.encoding_of(reply.client), cache, collected)
      end
      return { symbols = collected.list }
    end)
  end
  if type(uri) ~= "string" then
    return refuse("failed", kind .. " needs a document")
  end
  local bufnr = document(uri)
  if kind == "documentSymbols" then
    return query(bufnr, METHOD.documentSymbols, function()
      return { textDocument = { uri = uri } }
    end, deadline, function(replies, cache)
      local collected = { list = {} }
      for _, reply in ipairs(replies) do
        answers.symbols(reply.result, uri, clients.encoding_of(reply.client), cache, collected)
      end
      return { symbols = collected.list }
    end)
  end
  if type(position) ~= "table" then
    return refuse("failed", kind .. " needs a position")
  end
  if kind == "hover" then
    return query(bufnr, METHOD.hover, at_position(uri, position), deadline, hover)
  elseif kind == "callHierarchy" then
    return call_hierarchy(uri, position, bufnr, deadline)
  end
  local extra = kind == "references" and { context = { includeDeclaration = true } } or nil
  return query(bufnr, METHOD[kind], at_position(uri, position, extra), deadline, locations)
end

M.handlers["agent/editorQuery"] = function(_, params, _)
  local deadline = clients.now_ms() + (state.editor_query_wait_ms or DEFAULT_TIMEOUT_S * 900)
  local ok, result, err = pcall(answer, params or {}, deadline)
  -- Buffers loaded only to ask their language servers go again: left loaded (hidden), they would take
  -- the agent's later edits of those files as unsaved buffer text instead of the file on disk.
  for bufnr in pairs(loaded_here) do
    if vim.api.nvim_buf_is_loaded(bufnr) and not vim.api.nvim_buf_get_option(bufnr, "modified")
        and vim.fn.bufwinid(bufnr) == -1 then
      pcall(vim.api.nvim_buf_delete, bufnr, { unload = true })
    end
  end
  loaded_here = {}
  if not ok then
    return refuse("failed", "Neovim could not answer: " .. tostring(result))
  end
  return result, err
end

return M
