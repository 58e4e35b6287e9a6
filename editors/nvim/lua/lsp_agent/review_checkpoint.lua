-- The pre-run text of the files the server wrote on disk (they were not open in Neovim, so the
-- plugin never held it), from the server's own record: the run's first checkpoint (the workspace
-- right before its first step that could write) and a dry-run agent/rewind to it, whose diff goes
-- from the files now to the files then. Nothing is restored; the diff is only read.
local client = require("lsp_agent.client")
local text = require("lsp_agent.text")

local M = {}

-- The per-file sections of a unified diff: path -> { lines of the section }. `a/` is the file
-- now, `b/` the file at the checkpoint (/dev/null: it did not exist then).
local function sections(diff)
  local found, current = {}, nil
  for _, line in ipairs(vim.split(diff or "", "\n", { plain = true })) do
    local now = line:match("^%-%-%- a/(.*)$") or (line == "--- /dev/null" and "") or nil
    if now ~= nil then
      current = { now = now, lines = {} }
    elseif current and current.path == nil and line:match("^%+%+%+ ") then
      current.path = line:match("^%+%+%+ b/(.*)$") or current.now
      current.absent = line == "+++ /dev/null"
      found[current.path] = current
    elseif current and current.path then
      table.insert(current.lines, line)
    end
  end
  return found
end

-- The text at the checkpoint: `now` with the section's hunks applied (context and `+` lines kept,
-- `-` lines dropped); nil when the section is not a text diff.
local function apply(now, section)
  if section.absent then
    return {}
  end
  local out, at = {}, 1
  local hunk = false
  for _, line in ipairs(section.lines) do
    local start = line:match("^@@ %-(%d+)")
    if start then
      hunk = true
      start = tonumber(start)
      -- "-0,0" (an empty file now) starts before the first line.
      local first = math.max(start, 1)
      if line:match("^@@ %-%d+,0 ") then
        first = start + 1
      end
      while at < first do
        table.insert(out, now[at])
        at = at + 1
      end
    elseif hunk then
      local mark, rest = line:sub(1, 1), line:sub(2)
      if mark == " " then
        table.insert(out, rest)
        at = at + 1
      elseif mark == "+" then
        table.insert(out, rest)
      elseif mark == "-" then
        at = at + 1
      elseif line:match("^\\") then -- "\ No newline at end of file": nothing to keep
        hunk = true
      elseif line ~= "" then
        return nil
      end
    elseif line ~= "" then
      return nil -- a binary file, or one the server could not show
    end
  end
  while at <= #now do
    table.insert(out, now[at])
    at = at + 1
  end
  return out
end

-- The run's first checkpoint: the earliest one recorded for a step of the run.
local function first_checkpoint(checkpoints, message_ids)
  for _, checkpoint in ipairs(checkpoints) do
    if message_ids[checkpoint.messageID] and checkpoint.phase ~= "after" then
      return checkpoint.id
    end
  end
  return nil
end

-- Fills `file.before` of the run's files that lack it, then calls done(). `current_lines(file)`
-- reads a file now. A server without checkpoints (or a refusal) leaves them without, and says why.
function M.fill(run, current_lines, done)
  local missing = {}
  for _, path in ipairs(run.paths) do
    if run.files[path].before == nil then
      table.insert(missing, run.files[path])
    end
  end
  local c = #missing > 0 and next(run.message_ids or {}) ~= nil and client.get()
  if not c then
    return done()
  end
  client.request(c, "agent/checkpoints", { sessionID = run.sessionID }, function(err, result)
    local target = not err and first_checkpoint(result.checkpoints or {}, run.message_ids)
    if not target then
      if err then
        client.notify("no pre-run text for the files written on disk: " .. text.one_line(err.message),
          vim.log.levels.WARN)
      end
      return done()
    end
    local params = { sessionID = run.sessionID, toMessageID = target, restore = "code", dryRun = true }
    client.request(c, "agent/rewind", params, function(err2, rewind)
      if err2 then
        client.notify("no pre-run text for the files written on disk: " .. text.one_line(err2.message),
          vim.log.levels.WARN)
        return done()
      end
      local by_path = sections(text.value(rewind.diff))
      for _, file in ipairs(missing) do
        local section = by_path[file.path]
        local now = current_lines(file)
        if section == nil then
          file.before = now -- the same now as then
        else
          file.before = apply(now, section)
        end
        file.from_checkpoint = file.before ~= nil
      end
      done()
    end)
  end)
end

M.sections, M.apply = sections, apply -- for tests
return M
