-- The other language servers' answers in the shapes agent/editorQuery takes: LSP's own types, each
-- range turned from the answering server's position encoding into UTF-16, the server's. Fields are
-- copied one by one, so a JSON null (vim.NIL) or an unknown extra never reaches the server.
local positions = require("lsp_agent.positions")

local M = {}

local UTF16 = "utf-16"

local function is_table(value)
  return type(value) == "table"
end

local function push(list, value)
  if value then
    table.insert(list, value)
  end
end

local function text_or_nil(value)
  return type(value) == "string" and value or nil
end

local function range_of(uri, range, encoding, cache)
  if not is_table(range) or not is_table(range.start) or not is_table(range["end"]) then
    return nil
  end
  return positions.range(uri, range, encoding, UTF16, cache)
end

local EMPTY_RANGE = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } }

-- Location | Location[] | LocationLink[] | null, appended to `out` (a link becomes the location of
-- its target's name). `seen` drops a place two servers both report.
function M.locations(result, encoding, cache, out, seen)
  if not is_table(result) then
    return out
  end
  if result.uri ~= nil or result.targetUri ~= nil then
    result = { result }
  end
  for _, item in ipairs(result) do
    local uri = is_table(item) and text_or_nil(item.uri or item.targetUri)
    local range = uri and range_of(uri, item.range or item.targetSelectionRange or item.targetRange, encoding, cache)
    if range then
      local key = string.format("%s:%d:%d:%d:%d", uri, range.start.line, range.start.character, range["end"].line,
        range["end"].character)
      if not seen[key] then
        seen[key] = true
        table.insert(out, { uri = uri, range = range })
      end
    end
  end
  return out
end

local function marked_text(item)
  if type(item) == "string" then
    return item
  elseif is_table(item) and type(item.language) == "string" then
    return "```" .. item.language .. "\n" .. (text_or_nil(item.value) or "") .. "\n```"
  elseif is_table(item) then
    return text_or_nil(item.value)
  end
  return nil
end

-- A Hover's contents (MarkupContent, MarkedString or MarkedString[]) as text and its markup kind;
-- nil when there is nothing to show.
function M.hover(result)
  if not is_table(result) or result.contents == nil then
    return nil
  end
  local contents = result.contents
  local kind = "markdown"
  if type(contents) == "string" or (is_table(contents) and (contents.kind ~= nil or contents.language ~= nil)) then
    kind = is_table(contents) and contents.kind == "plaintext" and "plaintext" or "markdown"
    contents = { contents }
  end
  local parts = {}
  for _, item in ipairs(is_table(contents) and contents or {}) do
    local text = marked_text(item)
    if text and text ~= "" then
      table.insert(parts, text)
    end
  end
  if #parts == 0 then
    return nil
  end
  return table.concat(parts, "\n\n"), kind
end

local function document_symbol(symbol, uri, encoding, cache)
  local range = range_of(uri, symbol.range, encoding, cache)
  local selection = range_of(uri, symbol.selectionRange, encoding, cache) or range
  if type(symbol.name) ~= "string" or type(symbol.kind) ~= "number" or not range then
    return nil
  end
  local children = {}
  for _, child in ipairs(is_table(symbol.children) and symbol.children or {}) do
    push(children, is_table(child) and document_symbol(child, uri, encoding, cache))
  end
  return { name = symbol.name, kind = symbol.kind, range = range, selectionRange = selection,
           detail = text_or_nil(symbol.detail), children = children }
end

-- SymbolInformation, or a WorkspaceSymbol (whose location may carry no range: the document's start).
local function symbol_information(symbol, encoding, cache)
  local location = is_table(symbol.location) and symbol.location or {}
  local uri = text_or_nil(location.uri)
  if type(symbol.name) ~= "string" or type(symbol.kind) ~= "number" or not uri then
    return nil
  end
  return { name = symbol.name, kind = symbol.kind, containerName = text_or_nil(symbol.containerName),
           location = { uri = uri, range = range_of(uri, location.range, encoding, cache) or EMPTY_RANGE } }
end

-- DocumentSymbol[] | SymbolInformation[] added to `collected` ({ shape =, list = }): an answer may
-- not mix the two, so the first server's shape wins.
function M.symbols(result, uri, encoding, cache, collected)
  for _, symbol in ipairs(is_table(result) and result or {}) do
    if is_table(symbol) then
      local shape = symbol.location ~= nil and "information" or "document"
      collected.shape = collected.shape or shape
      if shape == "document" and collected.shape == shape then
        push(collected.list, document_symbol(symbol, uri, encoding, cache))
      elseif collected.shape == shape then
        push(collected.list, symbol_information(symbol, encoding, cache))
      end
    end
  end
  return collected
end

-- A CallHierarchyItem (its ranges are in its own document).
function M.call_item(item, encoding, cache)
  local uri = is_table(item) and text_or_nil(item.uri)
  local range = uri and range_of(uri, item.range, encoding, cache)
  if not range or type(item.name) ~= "string" or type(item.kind) ~= "number" then
    return nil
  end
  return { name = item.name, kind = item.kind, uri = uri, range = range, detail = text_or_nil(item.detail),
           selectionRange = range_of(uri, item.selectionRange, encoding, cache) or range }
end

-- CallHierarchyIncomingCall[] appended to `out`: each caller and where in it the call is.
function M.incoming_calls(result, encoding, cache, out)
  for _, call in ipairs(is_table(result) and result or {}) do
    local caller = is_table(call) and M.call_item(call.from, encoding, cache)
    if caller then
      local ranges = {}
      for _, span in ipairs(is_table(call.fromRanges) and call.fromRanges or {}) do
        push(ranges, range_of(caller.uri, span, encoding, cache))
      end
      table.insert(out, { from = caller, fromRanges = ranges })
    end
  end
  return out
end

-- Neovim's diagnostics of one buffer (vim.diagnostic items: 0-based lines, byte columns) as LSP
-- Diagnostics in UTF-16.
function M.diagnostics(bufnr, items)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local function position(lnum, col)
    return { line = lnum, character = positions.convert(lines[lnum + 1] or "", col or 0, "utf-8", UTF16) }
  end
  local out = {}
  for _, item in ipairs(items) do
    local lsp = is_table(item.user_data) and is_table(item.user_data.lsp) and item.user_data.lsp or {}
    local code = item.code or lsp.code
    table.insert(out, {
      range = { start = position(item.lnum, item.col),
                ["end"] = position(item.end_lnum or item.lnum, item.end_col or item.col) },
      message = tostring(item.message or ""),
      severity = item.severity,
      source = text_or_nil(item.source),
      code = (type(code) == "string" or type(code) == "number") and code or nil,
    })
  end
  return out
end

return M
