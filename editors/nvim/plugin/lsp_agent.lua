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

-- :AgentRewind [undo]: take the session back to before a message or step (lua/lsp_agent/rewind.lua)
vim.api.nvim_create_user_command("AgentRewind", function(c)
  require("lsp_agent").when_started(function()
    require("lsp_agent.rewind").command(c.args)
  end, ":AgentRewind" .. (c.args ~= "" and (" " .. c.args) or ""))
end, { nargs = "?", complete = function() return { "undo" } end, desc = "lsp-agent" })
