-- lsp-agent: the user commands (:AgentRun, :AgentEvents, ... :LspAgentTrust). Nothing starts until
-- one is used or require("lsp_agent").setup() is called.
if vim.g.loaded_lsp_agent then
  return
end
vim.g.loaded_lsp_agent = 1

if vim.fn.has("nvim-0.7") == 0 then
  vim.api.nvim_err_writeln("lsp-agent needs Neovim 0.7 or later")
  return
end

require("lsp_agent.commands").define()

