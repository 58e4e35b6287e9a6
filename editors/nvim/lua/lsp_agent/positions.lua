-- Columns between LSP position encodings. The lsp-agent server speaks UTF-16; another language
-- server may have negotiated UTF-8 or UTF-32 with Neovim, and Neovim's own diagnostics count bytes.
-- Pure Lua over the line's UTF-8 bytes, so it is the same on every Neovim (vim.str_utfindex
-- changed its signature in 0.11).
local M = {}

-- How many units one code point of `bytes` UTF-8 bytes takes in `encoding`.
local function units(bytes, encoding)
  if encoding == "utf-8" then
    return bytes
  elseif encoding == "utf-32" then
    return 1
  end
  return bytes == 4 and 2 or 1 -- UTF-16: a surrogate pair past the basic plane
end

local function sequence_length(byte)
  if byte >= 0xF0 then
    return 4
  elseif byte >= 0xE0 then
    return 3
  elseif byte >= 0xC0 then
    return 2
  end
  return 1
end

-- `column` of `line` counted in `from` units, counted in `to` units. A column past the end of the
-- line keeps its excess (servers send end-of-line positions like that).
function M.convert(line, column, from, to)
  if from == to or column == 0 then
    return column
  end
  local seen_from, seen_to, i = 0, 0, 1
  while i <= #line and seen_from < column do
    local bytes = sequence_length(line:byte(i))
    seen_from = seen_from + units(bytes, from)
    seen_to = seen_to + units(bytes, to)
    i = i + bytes
  end
  if seen_from < column then
    return seen_to + (column - seen_from)
  end
  return seen_to
end

-- The lines of the document at `uri`: the buffer's text when it is loaded (it may be unsaved),
-- else the file on disk; {} for anything else (a non-file URI, an unreadable file). `cache` keeps
-- one read per document for one answer.
function M.lines(uri, cache)
  if cache[uri] then
    return cache[uri]
  end
  local lines = {}
  local ok, fname = pcall(vim.uri_to_fname, uri)
  if ok and uri:sub(1, 7) == "file://" then
    local bufnr = vim.fn.bufnr(fname)
    if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
      lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
    elseif vim.fn.filereadable(fname) == 1 then
      local read_ok, read = pcall(vim.fn.readfile, fname)
      lines = read_ok and read or {}
    end
  end
  cache[uri] = lines
  return lines
end

-- `position` ({line, character}) in document `uri`, from one encoding to another.
function M.position(uri, position, from, to, cache)
  if from == to or type(position) ~= "table" then
    return position
  end
  local line = M.lines(uri, cache)[position.line + 1] or ""
  return { line = position.line, character = M.convert(line, position.character, from, to) }
end

-- `range` ({start, end}) in document `uri`, from one encoding to another.
function M.range(uri, range, from, to, cache)
  if from == to or type(range) ~= "table" then
    return range
  end
  return { start = M.position(uri, range.start, from, to, cache), ["end"] = M.position(uri, range["end"], from, to, cache) }
end

return M
