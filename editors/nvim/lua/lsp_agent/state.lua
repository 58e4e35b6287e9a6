-- What the plugin knows about the running server and the conversation, in one table every module
-- shares (require("lsp_agent") reads and writes these fields too: they are its public state).
return {
  client_id = nil,
  session_id = nil,   -- the conversation :AgentRun continues (:AgentNew starts another)
  generation = nil,   -- the running generation, if any
  last_finish = nil,  -- the last run_finish event
  root = nil,         -- the workspace the server was started for
  events_buf = nil,
  queue = {},         -- the session's follow-up queue, as the last agent/queueChanged sent it
  queue_buf = nil,
  mcp_buf = nil,
  receipts = {},      -- steering receipts by clientID, as agent/receipt updates them
  approval_wait_ms = 300000, -- how long an approval question waits for vim.ui.select (then: deny)
  root_markers = { ".git", ".lsp-agent" },
  show_progress = true, -- echo the server's $/progress messages
  gen_line = {},      -- generation -> the events-buffer line (0-based) where its lines begin
  announced = {},     -- generation -> true once its prompt line (== text) is in the events buffer
  run_error = {},     -- generation -> the message of its last error event
  row_status = {},    -- queue row id -> the status last seen
  next_prompts = {},  -- texts of waiting rows just sent: the prompts of the generations starting next
  corrections = {},   -- clientID -> text of a correction :AgentSteer sent, until it is applied or rejected
  stopped = {},       -- generation -> its stop reason, from its run_finish
  trust = nil,        -- the workspace trust state the server last reported (agent/workspaceTrust)
  trust_asked = {},   -- hash -> true once the user was asked about those files (asked once per hash)
  options = nil,      -- the options the server was last started with, for :checkhealth
  options_from = nil, -- where they came from: "setup()", "vim.g.lsp_agent" or the defaults
  starting_from = nil, -- set while a command starts the server without setup()
  -- the latest run, for statuslines (lua/lsp_agent/runstate.lua): running, sessionID, generation,
  -- step, maxSteps, stopReason, verification
  run_state = { running = false },
  review = { runs = {}, order = {} }, -- the pre-run text of each file a run edited (review_track.lua)
}
