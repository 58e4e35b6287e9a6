-- How the agent's edits reach buffers: workspace/applyEdit without the built-in message, and
-- agent/saveDocuments, answered by writing the buffers the agent edited before its checks.
local M = { handlers = {} }

-- The built-in handler echoes "Workspace edit <label>" for every edit; the edit itself is enough.
-- The buffers' text before the edit is kept for :AgentReview, whose list follows each edit.
M.handlers["workspace/applyEdit"] = function(err, params, ctx, config)
  if params then
    params.label = nil
    require("lsp_agent.review_track").before_edit(params)
  end
  local result = vim.lsp.handlers["workspace/applyEdit"](err, params, ctx, config)
  require("lsp_agent.review").refresh()
  return result
end

-- The server asks to save the buffers the agent edited, so its checks test what is in them.
M.handlers["agent/saveDocuments"] = function(_, params, _)
  local saved, failed = {}, {}
  for _, uri in ipairs(params.uris or {}) do
    local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
    if bufnr == -1 or not vim.api.nvim_buf_is_loaded(bufnr) then
      table.insert(failed, { uri = uri, reason = "not open in Neovim" })
    else
      local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
        vim.cmd("silent write")
      end)
      if ok then
        table.insert(saved, uri)
      else
        table.insert(failed, { uri = uri, reason = tostring(err) })
      end
    end
  end
  return { saved = saved, failed = failed }
end

return M
