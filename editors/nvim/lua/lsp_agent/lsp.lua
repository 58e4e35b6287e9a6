-- Starting the language client on each Neovim: vim.lsp.config/vim.lsp.enable on 0.11+,
-- vim.lsp.start on 0.8-0.10, vim.lsp.start_client on 0.7.
local M = {}

local function under(root, name)
  return name ~= "" and (name == root or name:sub(1, #root + 1) == root .. "/")
end
M.under = under

-- Neovim 0.11+ has vim.lsp.config/vim.lsp.enable: file buffers under the root attach through it.
local function has_lsp_config()
  return vim.fn.has("nvim-0.11") == 1 and vim.lsp.config ~= nil and vim.lsp.enable ~= nil
end

-- The client's id (nil: it could not be started).
function M.start(config, root)
  if has_lsp_config() then
    local enabled = vim.tbl_extend("force", config, {
      root_dir = function(bufnr, on_dir)
        if vim.bo[bufnr].buftype == "" and under(root, vim.api.nvim_buf_get_name(bufnr)) then
          on_dir(root)
        end
      end,
    })
    vim.lsp.config(config.name, enabled)
    vim.lsp.enable(config.name)
    -- Started now too (not at the first file), so :AgentRun works in an empty Neovim; the buffers
    -- vim.lsp.enable attaches reuse this client (same name and root).
    return vim.lsp.start(config, { attach = false })
  elseif vim.lsp.start then
    return vim.lsp.start(config)
  end
  return vim.lsp.start_client(config)
end

-- Every file buffer under the root is synchronised, so the agent reads unsaved text.
function M.attach_buffers(client_id, root)
  local function attach(bufnr)
    if vim.api.nvim_buf_get_option(bufnr, "buftype") == "" and under(root, vim.api.nvim_buf_get_name(bufnr)) then
      vim.lsp.buf_attach_client(bufnr, client_id)
    end
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      attach(bufnr)
    end
  end
  local group = vim.api.nvim_create_augroup("lsp_agent_attach", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    callback = function(args)
      attach(args.buf)
    end,
  })
end

-- A table sent as a JSON object: an empty Lua table would be encoded as an array.
function M.object(t)
  if t == nil or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

return M
