-- A finished run's verification in words: the same sentences as the VS Code transcript footer,
-- so a user moving between editors reads one wording.
local value = require("lsp_agent.text").value

local M = {}

local WHO_CHANGED = {
  agent_tool = "the agent's own edit",
  command = "a command the agent ran",
  outside_process = "a change outside the agent (your edit or revert, or another program)",
}

local WRITER = { agent_tool = "the agent's own edit tool", command = "a command the agent ran",
                 outside_process = "a change outside the agent" }

local LABEL = { verified = "verified", failed = "failed", not_run = "not run" }

-- `finish`: the run_finish event; `last_check`: how the generation's last verify_project ended
-- (passed, failed, error, denied, cancelled) or nil.
function M.verification(finish, last_check)
  local v = finish.verification
  if v == "verified" then
    return "Verified: the check passed after the last write."
  elseif v == "failed" then
    return "Failed: the last check failed, and nothing was written after it that could have fixed it."
  end
  local by = value(finish.invalidatedBy)
  if by then
    local paths = table.concat(by.paths or {}, ", ")
    return string.format("Not verified: %s changed %s after the check.", WHO_CHANGED[by.by] or tostring(by.by),
      paths ~= "" and paths or "a file")
  end
  if last_check == "denied" then
    return "Not run: the check was denied."
  elseif last_check == "cancelled" then
    return "Not run: the check was cancelled."
  elseif last_check == "error" then
    return "Not run: the check could not run (see its row)."
  elseif finish.toolCalls == 0 then
    return "Not run: the agent made no tool calls, so nothing was checked."
  end
  return #(finish.filesChanged or {}) > 0 and "Not verified: files changed and no check ran after them."
    or "Not run: no check ran in this task."
end

-- Why a run that had passed its check ends not_run, or nil.
function M.note(finish)
  local why = value(finish.verificationReason) or ""
  local by = value(finish.invalidatedBy)
  if why == "" and not by then
    return nil
  end
  if why == "" then
    local where = {}
    if value(by.tool) then
      table.insert(where, by.tool)
    end
    if value(by.step) then
      table.insert(where, "step " .. by.step)
    end
    local paths = table.concat(by.paths or {}, ", ")
    why = string.format("%s written by %s%s after the last check", paths ~= "" and paths or "a file",
      WRITER[by.by] or tostring(by.by), #where > 0 and (" (" .. table.concat(where, ", ") .. ")") or "")
  end
  return "Why not verified: " .. why:gsub("[.%s]+$", "")
    .. ". The checks have to run again (ask the agent to verify) for a verified result."
end

function M.label(finish)
  return LABEL[finish.verification] or tostring(finish.verification)
end

return M
