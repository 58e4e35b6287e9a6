-- :AgentReview: the files the latest run changed in the quickfix list ("lsp-agent review", one entry
-- per file with its +/- counts), a file's diff against its pre-run text (:diffthis with a scratch
-- buffer of that text), and keymaps to accept or revert a hunk or the whole file.
--
-- A revert is an ordinary change of the real buffer (one undo step), so it reaches the server as a
-- didChange like any edit of the user's; a buffer that matched its file before the revert is written
-- again, so the server sees the file change too and a check that passed no longer counts as verified.
local client = require("lsp_agent.client")
local state = require("lsp_agent.state")
local track = require("lsp_agent.review_track")

local M = {}

M.TITLE = "lsp-agent review"

-- Keymaps in a file shown by :AgentReview (options.review.keymaps; false leaves one out).
M.DEFAULT_KEYMAPS = {
  accept_hunk = "<localleader>a",
  accept_file = "<localleader>A",
  revert_hunk = "<localleader>r",
  revert_file = "<localleader>R",
}

local function options()
  local opts = (state.options or {}).review or {}
  return {
    keymaps = vim.tbl_extend("force", M.DEFAULT_KEYMAPS, opts.keymaps or {}),
    save_after_revert = opts.save_after_revert ~= false,
  }
end

local function describe(file)
  if file.before == nil then
    return "written on disk (its text before the run is unknown: no diff)"
  end
  local added, removed = track.counts(file)
  local note = file.state ~= "pending" and (" · " .. file.state) or ""
  return string.format("+%d -%d%s", added, removed, note)
end

local function items(run)
  local list = {}
  for _, path in ipairs(run.paths) do
    local file = run.files[path]
    local _, _, first = track.counts(file)
    local fname = state.root and (state.root .. "/" .. path) or path
    table.insert(list, { filename = fname, lnum = first, col = 1, text = describe(file) })
  end
  return list
end

-- The review's quickfix list id while it is still in the quickfix stack, else nil.
local function review_list()
  local id = state.review.qf_id
  if id == nil then
    return nil
  end
  local info = vim.fn.getqflist({ id = id, title = 0 })
  if info.id == 0 or info.title ~= M.TITLE then
    return nil
  end
  return id
end

-- Keeps an open review list up to date (after each of the agent's edits, an accept or a revert).
function M.refresh()
  local id = review_list()
  local run = track.latest()
  if id == nil or run == nil then
    return
  end
  vim.fn.setqflist({}, "r", { id = id, items = items(run), title = M.TITLE })
end

-- The file of the latest run at `path` (workspace-relative or absolute), or nil.
local function file_at(path)
  local run = track.latest()
  if run == nil then
    return nil
  end
  if state.root and path:sub(1, #state.root + 1) == state.root .. "/" then
    path = path:sub(#state.root + 2)
  end
  return run.files[path]
end

local function file_of_buffer(bufnr)
  local run = track.latest()
  if run == nil then
    return nil
  end
  for _, path in ipairs(run.paths) do
    local file = run.files[path]
    if file.bufnr == bufnr then
      return file
    end
  end
  return nil
end

local function pre_run_buffer(file)
  return file.scratch and vim.api.nvim_buf_is_valid(file.scratch) and file.scratch or nil
end

local function close_diff(file)
  local scratch = pre_run_buffer(file)
  if scratch then
    vim.api.nvim_buf_delete(scratch, { force = true })
  end
  file.scratch = nil
  if file.bufnr and vim.api.nvim_buf_is_loaded(file.bufnr) then
    for _, win in ipairs(vim.fn.win_findbuf(file.bufnr)) do
      vim.api.nvim_win_call(win, function()
        vim.cmd("diffoff")
      end)
    end
  end
end

local function mark(file, new_state)
  file.state = new_state
  M.refresh()
end

-- After a revert: a buffer that matched its file is written, so the file on disk follows too.
local function after_revert(file, was_modified)
  if options().save_after_revert and not was_modified then
    vim.api.nvim_buf_call(file.bufnr, function()
      vim.cmd("silent write")
    end)
  end
  mark(file, #track.hunks(file) == 0 and "reverted" or "pending")
end

-- The keymaps' actions, in the real buffer of a file under review.
local actions = {}

-- :diffget / :diffput from a keymap: a failure is said with vim.notify, not as a Lua traceback.
local function diff_command(command)
  local done, err = pcall(vim.cmd, command)
  if not done then
    client.notify(command:match("^%S+") .. " failed: " .. tostring(err), vim.log.levels.WARN)
  end
  vim.cmd("diffupdate")
  return done
end

function actions.accept_hunk(file)
  local scratch = pre_run_buffer(file)
  if not scratch then
    return
  end
  -- The hunk's text goes into the pre-run side, so the hunk leaves the diff; the file is untouched.
  if not diff_command("diffput " .. scratch) then
    return
  end
  local left = vim.diff(table.concat(vim.api.nvim_buf_get_lines(scratch, 0, -1, false), "\n") .. "\n",
    table.concat(vim.api.nvim_buf_get_lines(file.bufnr, 0, -1, false), "\n") .. "\n", { result_type = "indices" })
  mark(file, #left == 0 and "accepted" or file.state)
end

function actions.accept_file(file)
  close_diff(file)
  mark(file, "accepted")
  client.notify("accepted " .. file.path)
end

function actions.revert_hunk(file)
  local scratch = pre_run_buffer(file)
  if not scratch then
    return
  end
  local was_modified = vim.bo[file.bufnr].modified
  if diff_command("diffget " .. scratch) then
    after_revert(file, was_modified)
  end
end

function actions.revert_file(file)
  local was_modified = vim.bo[file.bufnr].modified
  -- One call, so one undo step brings the agent's version back.
  vim.api.nvim_buf_set_lines(file.bufnr, 0, -1, false, file.before)
  close_diff(file)
  after_revert(file, was_modified)
  client.notify("reverted " .. file.path .. " (u brings the change back)")
end

local function map_keys(file)
  -- The counts follow every change of the file under review (an undo, the user's own edits).
  local group = vim.api.nvim_create_augroup("lsp_agent_review_" .. file.bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "InsertLeave" }, { group = group, buffer = file.bufnr,
                                                                  callback = function() M.refresh() end })
  for action, lhs in pairs(options().keymaps) do
    if lhs then
      vim.api.nvim_buf_set_keymap(file.bufnr, "n", lhs, "", {
        noremap = true,
        nowait = true,
        desc = "lsp-agent review: " .. action:gsub("_", " "),
        callback = function()
          local current = file_of_buffer(vim.api.nvim_get_current_buf())
          if current then
            actions[action](current)
          end
        end,
      })
    end
  end
end

-- Shows the diff of `path` (a file of the latest run) against its pre-run text, in the current
-- window and a vertical split on its left.
function M.show(path)
  local file = file_at(path)
  if file == nil then
    client.notify("not changed by the last run: " .. path, vim.log.levels.WARN)
    return
  end
  if file.before == nil then
    client.notify(file.path .. ": " .. describe(file), vim.log.levels.WARN)
    vim.cmd("edit " .. vim.fn.fnameescape(state.root .. "/" .. file.path))
    return
  end
  if not (file.bufnr and vim.api.nvim_buf_is_loaded(file.bufnr)) then
    vim.cmd("edit " .. vim.fn.fnameescape(state.root .. "/" .. file.path))
    file.bufnr = vim.api.nvim_get_current_buf()
  end
  close_diff(file)
  vim.api.nvim_win_set_buf(0, file.bufnr)
  local real_win = vim.api.nvim_get_current_win()
  vim.cmd("leftabove vertical new")
  local scratch = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, file.before)
  vim.bo[scratch].buftype = "nofile"
  vim.bo[scratch].bufhidden = "wipe"
  vim.bo[scratch].swapfile = false
  vim.bo[scratch].filetype = vim.bo[file.bufnr].filetype
  pcall(vim.api.nvim_buf_set_name, scratch, "lsp-agent://pre-run/" .. file.path)
  file.scratch = scratch
  vim.cmd("diffthis")
  vim.api.nvim_set_current_win(real_win)
  vim.cmd("diffthis")
  map_keys(file)
  local _, _, first = track.counts(file)
  vim.api.nvim_win_set_cursor(real_win, { math.min(first, vim.api.nvim_buf_line_count(file.bufnr)), 0 })
end

-- <CR> in the quickfix window: the review's entries open their diff, other lists behave as usual.
local function on_enter()
  local info = vim.fn.getqflist({ title = 0, id = 0 })
  if info.title ~= M.TITLE or vim.fn.getwininfo(vim.fn.win_getid())[1].loclist == 1 then
    vim.cmd("execute \"normal! \\<CR>\"")
    return
  end
  local entry = vim.fn.getqflist()[vim.fn.line(".")]
  if entry == nil then
    return
  end
  local fname = vim.fn.bufname(entry.bufnr)
  vim.cmd("wincmd p")
  M.show(vim.fn.fnamemodify(fname, ":p"))
end

-- :AgentReview [file]: list the latest run's changed files in the quickfix list and open it; with a
-- file, show its diff at once.
local function list(run, path)
  vim.fn.setqflist({}, " ", { title = M.TITLE, items = items(run) })
  state.review.qf_id = vim.fn.getqflist({ id = 0 }).id
  if path ~= nil and path ~= "" then
    M.show(vim.fn.fnamemodify(path, ":p"))
    return
  end
  vim.cmd("botright copen")
  vim.api.nvim_buf_set_keymap(0, "n", "<CR>", "", { noremap = true, callback = on_enter,
                                                    desc = "lsp-agent review: open the diff" })
end

function M.review(path)
  local run = track.latest()
  if run == nil then
    client.notify("nothing to review: no run changed files in this Neovim yet")
    return
  end
  require("lsp_agent.review_checkpoint").fill(run, track.current_lines, function()
    list(run, path)
  end)
end

M.actions = actions -- for the keymaps' documentation and tests
return M
