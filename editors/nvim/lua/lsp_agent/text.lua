-- Small text helpers for what the server sends.
local M = {}

function M.first_line(text)
  return (tostring(text or ""):gsub("\n.*", ""))
end

-- JSON null arrives as vim.NIL.
function M.value(x)
  if x == vim.NIL then
    return nil
  end
  return x
end

-- Text from the server that quotes repository or model content, on one line: control characters
-- (C0, DEL, C1) are written out as \xNN, so a line break or escape sequence in a command's
-- arguments cannot add a line of its own to a menu (a forged item or a reassuring sentence).
function M.one_line(text)
  local escaped = tostring(text or ""):gsub("%c", function(c)
    return string.format("\\x%02x", c:byte())
  end)
  return (escaped:gsub("\194([\128-\159])", function(c)
    return string.format("\\x%02x", c:byte())
  end))
end

return M
