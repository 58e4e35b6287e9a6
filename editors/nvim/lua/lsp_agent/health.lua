-- :checkhealth lsp_agent — the server binary and its version, the model setting and where it comes
-- from, bubblewrap, the Neovim version, optional extras. vim.health on 0.10+, require("health")
-- (health#report_*) on 0.7-0.9.
local config = require("lsp_agent.config")
local state = require("lsp_agent.state")
local text = require("lsp_agent.text")
local workspace_file = require("lsp_agent.workspace_file")

local M = {}

local api = vim.health or require("health")
-- 0.10+ names them start/ok/...; 0.7-0.9 report_start/report_ok/...
local start = api.start or api.report_start
local ok = api.ok or api.report_ok
local info = api.info or api.report_info
local warn = api.warn or api.report_warn
local report_error = api.error or api.report_error

-- How long one probe (`lsp-agent --version`, a bwrap test) may take before it counts as failed.
M.PROBE_TIMEOUT_MS = 10000

-- Runs argv; returns the exit code (nil: timed out or could not start), stdout and stderr.
local function probe(argv)
  local out, err = {}, {}
  local started, job = pcall(vim.fn.jobstart, argv, {
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, data) out = data end,
    on_stderr = function(_, data) err = data end,
  })
  if not started or job <= 0 then
    return nil, "", "could not start " .. argv[1]
  end
  local code = vim.fn.jobwait({ job }, M.PROBE_TIMEOUT_MS)[1]
  if code == -1 then
    vim.fn.jobstop(job)
    return nil, "", string.format("no answer within %d s", M.PROBE_TIMEOUT_MS / 1000)
  end
  return code, vim.trim(table.concat(out, "\n")), vim.trim(table.concat(err, "\n"))
end

local function check_neovim()
  start("Neovim")
  local v = vim.version()
  local version = string.format("%d.%d.%d", v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    ok("Neovim " .. version)
  elseif vim.fn.has("nvim-0.7") == 1 then
    ok("Neovim " .. version .. " (0.7-0.9: works, with reduced features)")
    info("0.10+ shows the server's progress natively and registers it with vim.lsp.config (0.11+); "
      .. "here progress is echoed and the client is started directly")
  else
    report_error("Neovim " .. version .. ": lsp-agent needs 0.7 or later")
  end
end

local function options()
  if state.options ~= nil then
    return state.options, state.options_from
  end
  if type(vim.g.lsp_agent) == "table" then
    return vim.g.lsp_agent, "vim.g.lsp_agent"
  end
  return {}, "defaults (setup() not called)"
end

local function check_server(opts, from)
  start("lsp-agent server")
  info("options: " .. from)
  local cmd, why = config.server_command(opts)
  if not cmd then
    report_error(why, { "install it (docs/install.md): e.g. pipx install ./lsp_agent-*.whl, or from a checkout",
                 "or point the plugin at a virtual environment: setup({ python = \"/path/venv/bin/python\" })" })
    return
  end
  ok(string.format("server: %s (from %s)", table.concat(cmd, " "), why))
  local argv = config.version_command(cmd)
  if not argv then
    info("a custom cmd without `serve`: its version is not checked")
    return
  end
  local code, out, err = probe(argv)
  if code ~= 0 then
    report_error(string.format("`%s` failed: %s", table.concat(argv, " "), text.one_line((err ~= "" and err) or out)))
    return
  end
  local found = out:match("^lsp%-agent%s+(%S+)")
  local expected = require("lsp_agent.version")
  if found == expected then
    ok("version " .. found)
  elseif found == nil or found == "unknown" then
    warn(string.format("version unknown (`%s` said: %s); this plugin is for %s", table.concat(argv, " "),
      text.one_line(out), expected), { "install lsp-agent as a package (not only a checkout on PYTHONPATH)" })
  else
    warn(string.format("version %s; this plugin is for %s", found, expected),
      { "install the same version of the server and the plugin" })
  end
  if state.client_id and vim.lsp.get_client_by_id(state.client_id) then
    info("running for " .. tostring(state.root))
  else
    info("not started yet (the first :Agent command starts it)")
  end
end

-- The top-level `model = "..."` of a TOML text (before any [section]); nil when absent.
local function toml_model(toml)
  for line in (toml .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%s*%[") then
      return nil
    end
    local model = line:match("^%s*model%s*=%s*\"([^\"]*)\"") or line:match("^%s*model%s*=%s*'([^']*)'")
    if model then
      return model
    end
  end
  return nil
end

local function user_config_path()
  local base = vim.env.XDG_CONFIG_HOME
  if base == nil or base == "" then
    base = vim.loop.os_homedir() .. "/.config"
  end
  return base .. "/lsp-agent/config.toml"
end

local function check_model(opts, from)
  start("model")
  local settings = type(opts.settings) == "table" and opts.settings or {}
  local init = type(opts.init_options) == "table" and opts.init_options or {}
  local user_file = user_config_path()
  local user_toml = workspace_file.read(user_file)
  local user_model = user_toml and toml_model(user_toml)
  local chosen, where
  if type(settings.model) == "string" then
    chosen, where = settings.model, from .. " settings"
  elseif type(init.model) == "string" then
    chosen, where = init.model, from .. " init_options"
  elseif user_model then
    chosen, where = user_model, "the user config file " .. user_file
  end
  if chosen then
    ok(string.format("model %s (from %s)", text.one_line(chosen), where))
  end
  -- The workspace's own file chooses the model only once the user trusts it (the server decides).
  local root = state.root or config.find_root(config.search_start(), state.root_markers)
  if root then
    local path = root:gsub("/$", "") .. "/.lsp-agent/config.toml"
    local toml, why = workspace_file.read(path)
    local workspace_model = toml and toml_model(toml)
    if workspace_model then
      info(string.format("the workspace's %s names model %s: it applies only once you trust the workspace "
        .. "(:LspAgentTrust), and your own settings above win", path, text.one_line(workspace_model:sub(1, 200))))
    elseif why and vim.loop.fs_lstat(path) then
      warn(string.format("the workspace's %s is not read: %s", path, text.one_line(why)))
    end
  end
  if not chosen then
    warn("no model configured", { "setup({ init_options = { model = \"ollama/qwen2.5-coder\" } })",
      "or model = \"...\" in " .. user_file })
  end
end

local function check_bwrap()
  start("sandbox (bubblewrap)")
  local bwrap = config.find_on_path("bwrap")
  if not bwrap then
    warn("bwrap is not on PATH: the agent's commands cannot run sandboxed (docs/security.md)",
      { "install bubblewrap (apt install bubblewrap, dnf install bubblewrap)" })
    return
  end
  local code, _, err = probe({ bwrap, "--ro-bind", "/", "/", "true" })
  if code == 0 then
    ok("bwrap works: " .. bwrap)
  else
    warn(string.format("bwrap is installed (%s) but cannot run: %s", bwrap, text.one_line(err)),
      { "unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, "
        .. "or an AppArmor profile for bwrap)" })
  end
end

-- Whether treesitter can load the markdown parser (0.10+ ship one; older ones need nvim-treesitter's).
local function has_markdown_parser()
  local language = vim.treesitter and vim.treesitter.language
  if language and language.add then
    -- 0.10 raises when it cannot; 0.11+ returns nil and why; success is true (0.11+) or nothing (0.10).
    local loaded, added, why = pcall(language.add, "markdown")
    if loaded and added ~= false and why == nil then
      return true
    end
  end
  return #vim.api.nvim_get_runtime_file("parser/markdown.so", false) > 0
end

local function check_optional()
  start("chat and review")
  if has_markdown_parser() then
    ok("treesitter markdown parser: installed (the chat buffer is highlighted)")
  else
    warn("treesitter markdown parser: not installed (optional: the chat buffer works, without highlighting)",
      { ":TSInstall markdown markdown_inline (nvim-treesitter), or Neovim 0.10+, which ships it" })
  end
  if vim.diff ~= nil then
    ok("vim.diff: available (:AgentReview counts the changed lines)")
  else
    report_error("vim.diff is missing: :AgentReview needs Neovim 0.7 or later")
  end
end

-- Which editor-query kinds Neovim declares, and which of your language servers run to answer them
-- (:checkhealth's own buffer is current here, so it is every server, not the current file's).
local function check_editor_queries(opts)
  start("editor queries (your language servers as the agent's tools)")
  local editor_queries = require("lsp_agent.editor_queries")
  local kinds = editor_queries.kinds(opts.editor_queries)
  if #kinds == 0 then
    info("off (editor_queries = false): the agent is offered no find_definition, find_references, hover, ... tools")
    return
  end
  info("answered: " .. table.concat(kinds, ", "))
  local names = editor_queries.other_servers(nil)
  if #names == 0 then
    info("no other language server is running: the agent's queries get \"no language server\"")
  else
    ok("language servers that answer for the files they are attached to: " .. table.concat(names, ", "))
  end
end

function M.check()
  local opts, from = options()
  check_neovim()
  check_server(opts, from)
  check_model(opts, from)
  check_bwrap()
  check_optional()
  check_editor_queries(opts)
end

return M
