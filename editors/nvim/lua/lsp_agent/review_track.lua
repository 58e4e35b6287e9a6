-- What each run changed and what the files held before it: the material of :AgentReview.
--
-- The pre-run text is the buffer as the plugin saw it just before the run's first
-- workspace/applyEdit to that file: the server edits open files only through applyEdit, so that
-- text is exact (unsaved changes included) and known while the run still streams. Files the server
-- wrote on disk (not open in Neovim) are listed from the run's end; their pre-run text comes from
-- the server's checkpoints when reviewed (review_checkpoint.lua), never guessed.
local state = require("lsp_agent.state")

local M = {}

-- How many runs are remembered (the oldest are forgotten first).
M.KEEP = 10

local function root_relative(fname)
  local root = state.root
  if root and fname:sub(1, #root + 1) == root .. "/" then
    return fname:sub(#root + 2)
  end
  return fname
end

-- The run `generation` (created on first use), remembered in arrival order.
local function run_of(session_id, generation)
  local review = state.review
  local run = review.runs[generation]
  if run == nil then
    run = { generation = generation, sessionID = session_id, files = {}, paths = {}, message_ids = {} }
    review.runs[generation] = run
    table.insert(review.order, generation)
    while #review.order > M.KEEP do
      review.runs[table.remove(review.order, 1)] = nil
    end
  end
  return run
end

local function add_file(run, path, file)
  if run.files[path] == nil then
    run.files[path] = file
    table.insert(run.paths, path)
  end
  return run.files[path]
end

-- The document URIs whose text a workspace/applyEdit changes (both `documentChanges` and `changes`).
local function edited_uris(edit)
  local uris = {}
  if type(edit) ~= "table" then
    return uris
  end
  if type(edit.documentChanges) == "table" then
    for _, change in ipairs(edit.documentChanges) do
      if type(change) == "table" and type(change.textDocument) == "table" and type(change.edits) == "table" then
        table.insert(uris, change.textDocument.uri)
      end
    end
  elseif type(edit.changes) == "table" then
    for uri in pairs(edit.changes) do
      table.insert(uris, uri)
    end
  end
  return uris
end

-- Called just before a workspace/applyEdit is applied: the buffers it changes keep their text now
-- as the pre-run text, unless this run already changed them.
function M.before_edit(params)
  local run = run_of(state.session_id, state.generation or "?")
  for _, uri in ipairs(edited_uris(params and params.edit)) do
    local bufnr = vim.uri_to_bufnr(uri)
    local path = root_relative(vim.uri_to_fname(uri))
    if run.files[path] == nil and vim.api.nvim_buf_is_loaded(bufnr) then
      add_file(run, path, { path = path, bufnr = bufnr, state = "pending",
                            before = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false) })
    end
  end
end

-- Per agent/event: the run's steps (their checkpoints hold the text of files written on disk) and
-- its end, which names those files as well.
function M.observe(params)
  local event = params.event
  if event.type == "tool_start" and type(event.part) == "table" and type(event.part.messageID) == "string" then
    local run = run_of(params.sessionID, params.generation)
    run.message_ids[event.part.messageID] = true
    return
  end
  if event.type ~= "run_finish" or #(event.filesChanged or {}) == 0 then
    return
  end
  local run = run_of(params.sessionID, params.generation)
  -- Edits applied before the plugin knew the generation were filed under "?": they are this run's.
  local unknown = state.review.runs["?"]
  if unknown ~= nil then
    for _, path in ipairs(unknown.paths) do
      add_file(run, path, unknown.files[path])
    end
    state.review.runs["?"] = nil
  end
  for _, path in ipairs(event.filesChanged) do
    add_file(run, path, { path = path, state = "pending" })
  end
end

-- The latest run that changed files, or nil.
function M.latest()
  local review = state.review
  for i = #review.order, 1, -1 do
    local run = review.runs[review.order[i]]
    if run ~= nil and #run.paths > 0 then
      return run
    end
  end
  return nil
end

-- The file's current lines: its buffer's when loaded, else the file on disk.
function M.current_lines(file)
  if file.bufnr and vim.api.nvim_buf_is_loaded(file.bufnr) then
    return vim.api.nvim_buf_get_lines(file.bufnr, 0, -1, false)
  end
  local fname = state.root and (state.root .. "/" .. file.path) or file.path
  if vim.fn.filereadable(fname) == 1 then
    return vim.fn.readfile(fname)
  end
  return {}
end

-- The hunks between the pre-run text and now: { {start_before, count_before, start_now, count_now}, ... }.
function M.hunks(file)
  if file.before == nil then
    return {}
  end
  local before = table.concat(file.before, "\n") .. "\n"
  local now = table.concat(M.current_lines(file), "\n") .. "\n"
  return vim.diff(before, now, { result_type = "indices" }) or {}
end

-- Lines added and removed since the pre-run text, and the first changed line now (1-based).
function M.counts(file)
  local added, removed, first = 0, 0, nil
  for _, h in ipairs(M.hunks(file)) do
    removed, added = removed + h[2], added + h[4]
    first = first or math.max(h[3], 1)
  end
  return added, removed, first or 1
end

return M
