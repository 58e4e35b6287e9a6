"""Settings: defaults < workspace `.lsp-agent/config.toml` < user file < editor options < CLI flags.

Every limit and threshold the harness uses is a field here, with its documented value as default.
The user's own file outranks the repository's; and the repository's file contributes only its safe
settings until the user trusts the workspace (settings/workspace_gate.py, workspace_trust.py).
"""

from __future__ import annotations

import copy
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lsp_agent.settings import workspace_trust
from lsp_agent.settings.approval_rules import AllowRule, parse_rule
from lsp_agent.settings.mcp_servers import McpSettings


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Limits(_Section):
    read_lines: int = Field(800, ge=1, description="Most lines one read_file call returns.")
    read_line_chars: int = Field(2000, ge=20, description="A read_file line is cut to this many chars.")
    list_depth: int = Field(2, ge=1, le=10, description="Default list_dir depth.")
    list_entries: int = Field(400, ge=1, description="Most entries one list_dir call returns.")
    search_results: int = Field(100, ge=1, description="Default and maximum search_code matches.")
    search_line_chars: int = Field(300, ge=20, description="A matched line is cut to this many chars.")
    command_timeout_s: float = Field(120, gt=0, description="Default run_command timeout (seconds).")
    command_timeout_max_s: float = Field(300, gt=0, description="Largest run_command timeout allowed.")
    output_chars: int = Field(8000, ge=200, description="Command output beyond this keeps head + tail.")
    write_bytes: int = Field(1_000_000, ge=1, description="Largest text one write_file/apply_patch call may send "
                                                          "(the edit itself: content, patch or new_text).")
    file_bytes: int = Field(8_000_000, ge=1, description="Largest file apply_patch edits or produces (bytes).")
    failed_edits_before_reread: int = Field(3, ge=1, description="Failed edits of a file before a re-read.")
    loop_warn_repeats: int = Field(3, ge=2, description="Identical calls in a row that get a warning.")
    loop_stop_repeats: int = Field(5, ge=2, description="Identical calls in a row that stop the run.")
    verify_timeout_s: float = Field(300, gt=0, description="Timeout of one verification command.")
    internal_timeout_s: float = Field(
        15, gt=0, description="Timeout of one program the harness runs for itself (git for list_dir, "
        "fingerprints and write detection, rg for search_code); a stall there is the call's error.")
    result_chars: int = Field(
        50_000, ge=500, description="Bound on any one tool result text (800 typical code lines fit).")
    trace_result_chars: int = Field(2_000, ge=100, description="Tool result chars kept in the trace.")
    rejected_args_chars: int = Field(
        2_000, ge=0, description="A refused call's arguments longer than this are not kept in the history: "
        "only the tool name, their size and a short preview (a 20 MB refused write must not travel with "
        "every later request).")
    store_busy_ms: int = Field(
        1_000, ge=0, le=10_000, description="How long one store write waits for another process's lock "
        "(milliseconds) before it is refused as `store_unavailable` (locked): the write runs on the event loop, so "
        "this bounds how long a lock can hold up the server.")
    instructions_bytes: int = Field(
        32 * 1024, ge=0, description="Most bytes of project instructions (AGENTS.md, .lsp-agent/instructions.md) "
        "sent to the model, all files together; beyond it a file is cut with a marker (0: none are sent).")
    # --- experimental tools: tool_search and read_recipe ---
    tool_search_results: int = Field(5, ge=1, le=5, description="Most schemas one tool_search returns.")
    tool_search_selected: int = Field(32, ge=1, description="Most MCP tools tool_search selects per session.")
    recipe_steps: int = Field(8, ge=1, description="Most steps in one read_recipe.")
    recipe_deadline_s: float = Field(60, gt=0, description="read_recipe cancellation deadline (seconds).")
    recipe_args_bytes: int = Field(32 * 1024, ge=64, description="Largest read_recipe argument JSON.")
    recipe_intermediate_bytes: int = Field(
        192 * 1024, ge=1024, description="Budget of the children's results in one read_recipe.")
    recipe_output_chars: int = Field(16_000, ge=200, description="Bound on read_recipe's final output.")
    read_bytes: int = Field(10_000_000, ge=1, description="read_file and search_code refuse (and never read) "
                                                          "files larger than this many bytes.")
    sessions_in_memory: int = Field(
        8, ge=1, description="Idle sessions a long-lived server keeps loaded; the least recently used "
        "beyond this are dropped from memory (they stay in the store and reload on demand).")
    # --- one writer per session (several processes on one workspace) ---
    session_lease_s: float = Field(
        30, ge=3, le=3600, description="How long a session lease outlives its holder's last heartbeat when "
        "the holder cannot be checked directly (another host or pid namespace); the holder renews it every "
        "third of this. A holder on this host and namespace is checked by its identity, at once.")
    # --- steering a running generation (receipts live in process memory) ---
    steer_chars: int = Field(
        16_000, ge=1, le=200_000, description="Longest correction agent/steer admits, and longest queued "
        "follow-up agent/queue/steer admits (characters, after trimming); longer: rejected `too_long` / "
        "`not_steerable`.")
    steer_pending: int = Field(
        32, ge=1, le=10_000, description="Corrections accepted but not yet applied, per session; one more is "
        "rejected `too_many_pending`.")
    steer_receipts: int = Field(
        256, ge=1, le=100_000, description="Steering receipts kept per session; past this the oldest settled "
        "ones are forgotten (an identical retry of a forgotten one is a new correction).")
    # --- context_recover (experimental flag context_recovery) ---
    recover_page_parts: int = Field(
        100, ge=1, le=10_000, description="Most history parts one context_recover call scans; more continue with "
                                          "`before`.")
    recover_part_chars: int = Field(
        16_000, ge=100, le=1_000_000, description="Characters of each history part context_recover searches and "
                                                  "quotes from (the part's head).")
    # --- capabilities: the long-task context pack and effort escalation ---
    context_pack_min_context: int = Field(
        64_000, ge=1000, le=100_000_000, description="Smallest context window (tokens) of a model that gets the "
        "long-task context pack in its instructions (it also needs reasoning and tool support).")
    context_pack_max_tokens: int = Field(
        2_048, ge=0, le=100_000, description="Largest context pack (tokens, estimated as characters / 4) sent; a "
        "pack over it is not sent (0: never).")
    escalate_after_failures: int = Field(
        2, ge=1, le=1000, description="Structured tool failures in a row since the latest user message that "
        "raise the next request's reasoning effort one level (models with effort levels only).")


class VerifyCommand(_Section):
    kind: Literal["test", "typecheck", "lint"]
    argv: list[str] = Field(min_length=1)
    parser: Literal["pytest", "mypy", "pyright", "ruff", "tsc", "generic"] = "generic"


#: The default `tools.sensitive_paths`: files that run code when an editor, shell, CI or git opens the
#: workspace. `.git/` and `.lsp-agent/` are not here: they are never written by the model at all.
SENSITIVE_PATHS = (
    ".vscode/tasks.json", ".vscode/settings.json", ".vscode/launch.json", "*.code-workspace",
    ".envrc", ".github/workflows/**", ".gitlab-ci.yml", ".githooks/**", ".husky/**",
    ".pre-commit-config.yaml", ".devcontainer/**", ".devcontainer.json",
    ".nvim.lua", ".nvimrc", ".exrc", ".dir-locals.el", ".dir-locals-2.el",
)


class ToolSettings(_Section):
    allowed_programs: list[str] = Field(
        default_factory=lambda: ["python", "python3", "pytest", "node", "npm", "ls", "cat", "rg", "git"]
    )
    git_read_only: list[str] = Field(default_factory=lambda: ["status", "diff", "log", "show"])
    generated_globs: list[str] = Field(default_factory=list)
    verify: list[VerifyCommand] | None = Field(
        None, description="Fixed verification commands; detected from the project when unset."
    )
    sensitive_paths: list[str] = Field(
        default_factory=lambda: list(SENSITIVE_PATHS),
        description=(
            "Workspace files other programs execute when the workspace is opened (editor tasks and settings, "
            "direnv, CI workflows, git hook directories, dev containers, Neovim's exrc, Emacs' dir-locals), as "
            "globs anchored at the workspace root (`*` within one path component, `**` across them, `dir/**` "
            "also names `dir`; letter case ignored). apply_patch and write_file change one only with the user's "
            "approval (refused under approvalPolicy `never`); a sandboxed command sees the existing ones "
            "read-only, and one it creates is removed when it ends. Only the user's settings set this list: a "
            "workspace's own config cannot shrink it."))

    @field_validator("sensitive_paths")
    @classmethod
    def _inside_the_workspace(cls, value: list[str]) -> list[str]:
        for pattern in value:
            parts = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
            if not parts or ".." in parts:
                raise ValueError(f"{pattern!r}: a sensitive path is a glob inside the workspace, relative to its "
                                 "root, without '..'")
        return value


class Experimental(_Section):
    context_recovery: bool = False
    mcp_tool_discovery: bool = False
    tail_reminders: bool = False
    read_only_recipes: bool = False


class Compaction(_Section):
    """Context management: fold old tool results, then compact, within the budget (see "Context
    management: fold, then a checked compaction, then a handoff" in docs/decisions.md).

    The budget is the model's context window (or `context_window`) minus `output_reserve_tokens`.
    """

    auto: bool = Field(True, description="Compact automatically past `compact_at`; false: a request that "
                                         "would overflow the budget stops the run with `error` instead.")
    fold: bool = Field(True, description="Fold old tool results into one-line placeholders past `fold_at`.")
    fold_at: float = Field(0.70, gt=0, lt=1, description="Share of the budget at which old results fold.")
    compact_at: float = Field(0.95, gt=0, le=1, description="Share of the budget at which history compacts.")
    keep_recent_messages: int = Field(
        8, ge=2, le=200, description="The last messages are never folded and stay verbatim through compaction.")
    output_reserve_tokens: int = Field(
        4096, ge=0, description="Tokens kept free for the reply (at most a quarter of the window is reserved).")
    context_window: int | None = Field(
        None, ge=1000, description="Tokens of context; default: the model's (registry or declaration).")
    fold_min_chars: int = Field(400, ge=0, description="Tool results shorter than this are never folded.")
    fold_min_freed: float = Field(
        0.20, ge=0, lt=1, description="A fold batch runs only when it frees this share of the budget "
                                      "(fewer, larger batches keep the cached prefix longer).")
    min_freed_ratio: float = Field(
        0.20, ge=0, lt=1, description="A compaction that frees less than this share of the request's tokens is "
                                      "not applied: the run stops and says so.")
    handoff_after_same_failures: int = Field(
        3, ge=0, description="Restart in a fresh session with a handoff note when the same check failed the "
                             "same way this many times in a row (0: never).")


#: The editor queries the server can ask (the client declares which it answers), in the fixed order
#: their tools are listed in.
EDITOR_QUERY_KINDS = ("definition", "references", "hover", "documentSymbols", "workspaceSymbols", "diagnostics",
                      "typeDefinition", "implementation", "callHierarchy")


class LanguageServerSettings(_Section):
    """One language server the harness starts itself where no editor answers the queries (the
    headless CLI, and so eval): a program speaking LSP over stdio. User config (or a CLI flag) only."""

    command: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="The program and its arguments, e.g. [\"basedpyright-langserver\", \"--stdio\"]; "
                                  "a bare name is looked up on PATH, then next to the Python running lsp-agent.")
    extensions: list[Annotated[str, Field(pattern=r"^\.[^/\\]+$")]] = Field(
        min_length=1, description="The file name endings it answers for, e.g. [\".py\", \".pyi\"].")
    kinds: list[str] | None = Field(
        None, description="Only these query kinds from it (default: every kind its capabilities declare).")
    language_id: str | None = Field(None, alias="languageId", min_length=1,
                                    description="The LSP language id of its documents (default: from the extension).")
    start_timeout_s: float = Field(60.0, gt=0, le=600, alias="startTimeoutS",
                                   description="Seconds to wait for its answer to `initialize`.")

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, value: list[str] | None) -> list[str] | None:
        unknown = [k for k in value or [] if k not in EDITOR_QUERY_KINDS]
        if unknown:
            raise ValueError(f"unknown editor query kinds {unknown}; known: {', '.join(EDITOR_QUERY_KINDS)}")
        return value


class EditorQuerySettings(_Section):
    """The editor's language intelligence as tools (docs/configuration.md). A workspace's own config may
    only turn it off or tighten it: nothing from a repository makes the agent ask the editor more."""

    enabled: bool = Field(True, description="Offer the editor-query tools when the editor declares it answers them.")
    disabled_kinds: list[str] = Field(
        default_factory=list, alias="disabledKinds",
        description="Query kinds not to offer, e.g. [\"workspaceSymbols\"]; the others stay on.")
    timeout_s: float = Field(5.0, gt=0, le=120, alias="timeoutS",
                             description="Seconds to wait for the editor's answer to one query.")
    max_results: int = Field(50, ge=1, le=1000, alias="maxResults",
                             description="Most locations, symbols or diagnostics one tool result lists.")
    result_chars: int = Field(8000, ge=200, le=200_000, alias="resultChars",
                              description="Most characters of one editor-query tool result.")
    outside_workspace: Literal["signature", "refuse"] = Field(
        "signature", alias="outsideWorkspace",
        description="Locations outside the workspace (libraries): signature shows the hover line for them, never "
                    "the file; refuse lists only that they are outside.")
    diagnostics_after_edits: bool = Field(
        True, alias="diagnosticsAfterEdits",
        description="After an edit, append the new errors the editor reports for the edited files.")
    diagnostics_settle_s: float = Field(
        0.5, ge=0, le=10, alias="diagnosticsSettleS",
        description="The editor's diagnostics must stay unchanged this long before they are reported.")
    diagnostics_wait_s: float = Field(3.0, ge=0, le=60, alias="diagnosticsWaitS",
                                      description="Longest wait for the diagnostics to settle after an edit.")
    diagnostics_note_lines: int = Field(10, ge=1, le=200, alias="diagnosticsNoteLines",
                                        description="Most errors listed in the note after an edit.")
    language_servers: list[LanguageServerSettings] = Field(
        default_factory=list, alias="languageServers",
        description="Language servers the harness starts itself when no editor answers the queries (the headless "
                    "CLI and eval); none by default. Never from a workspace's own config, even a trusted one.")

    @field_validator("disabled_kinds")
    @classmethod
    def _known_kinds(cls, value: list[str]) -> list[str]:
        unknown = [k for k in value if k not in EDITOR_QUERY_KINDS]
        if unknown:
            raise ValueError(f"unknown editor query kinds {unknown}; known: {', '.join(EDITOR_QUERY_KINDS)}")
        return value

    def offered(self, declared: list[str] | tuple[str, ...]) -> tuple[str, ...]:
        """The kinds to turn into tools: declared by the editor, on here, in the fixed order."""
        if not self.enabled:
            return ()
        return tuple(k for k in EDITOR_QUERY_KINDS if k in declared and k not in self.disabled_kinds)


class Checkpoints(_Section):
    """The workspace recorded before every step that may write, so any step can be taken back
    (docs/architecture.md, "Checkpoints and rewind"). Kept in the state directory, never in the workspace."""

    enabled: bool = Field(True, description="Record a checkpoint before every step that may write.")
    file_bytes: int = Field(
        8_000_000, ge=0, le=1 << 32, description="A file larger than this is not copied into a checkpoint (it is "
        "listed as too large to restore).")
    checkpoint_bytes: int = Field(
        256_000_000, ge=0, le=1 << 40, description="Most new bytes one checkpoint copies; files past it are "
        "listed as too large to restore.")
    per_session: int = Field(200, ge=1, le=100_000, description="Checkpoints kept per session (older are folded).")
    total: int = Field(2_000, ge=1, le=1_000_000, description="Checkpoints kept per workspace, all sessions.")
    total_bytes: int = Field(
        2_000_000_000, ge=0, le=1 << 44, description="Most disk the workspace's checkpoint store keeps (file "
        "contents, compressed); past it the oldest checkpoints are folded and contents no checkpoint needs are "
        "deleted. The current files are always kept, even past it.")


class ProviderConfig(_Section):
    base_url: str = Field(alias="baseUrl")
    wire: Literal["chat", "responses"] = "chat"
    api_key_env: str | None = Field(None, alias="apiKeyEnv")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(60, gt=0, alias="timeoutS")
    idle_timeout_s: float = Field(
        60, gt=0, alias="idleTimeoutS",
        description="Seconds a stream may go without data before the request fails; keep-alive comments "
                    "are not data and do not reset it.")
    request_timeout_s: float = Field(
        1800, gt=0, alias="requestTimeoutS",
        description="Longest one model request may take, from the first send to the reply's last event, "
                    "retries and backoff included; nothing the server sends extends it. Generous by default "
                    "for slow local models; it is the bound on a server that keeps a stream busy forever.")
    max_retries: int = Field(4, ge=0, le=10, alias="maxRetries")
    discover: bool = Field(
        True, description="Ask the server for its context window and model id (/v1/models, /props, /api/show) "
                          "before a run; the user's own declarations still win.")
    max_output_tokens: int | None = Field(
        None, ge=1, alias="maxOutputTokens",
        description="Output-token limit sent with each request (max_tokens / max_output_tokens); "
                    "default: the model's (registry or declaration), else 4096.")
    tool_call_format: Literal["auto", "native", "text"] = Field(
        "native", alias="toolCallFormat",
        description="native: only the server's structured tool calls; text: also <tool_call>{...}</tool_call> "
                    "or fenced JSON calls written in the reply text; auto: switch to text once a reply "
                    "carries a valid one (and say so).")


MAX_SEED = 2**63 - 1


class Sampling(_Section):
    """How the model samples, sent with every request of a run (unset: the server's default).

    Separate from a provider's section so one run (an eval arm, say) can pin them whatever model it names.
    """

    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature, 0 to 2.")
    seed: int | None = Field(
        None, ge=0, le=MAX_SEED, description="Seed for servers that support reproducible sampling (chat wire only; "
                                             "the Responses API has none).")
    max_output_tokens: int | None = Field(
        None, ge=1, le=1_000_000, alias="maxOutputTokens",
        description="Output-token limit of every request; wins over the provider's and the model's.")


class ModelInfo(_Section):
    context_window: int | None = Field(None, alias="contextWindow")
    reasoning: bool | None = None
    tools: bool | None = None
    efforts: list[str] = Field(default_factory=list)
    max_output_tokens: int | None = Field(None, ge=1, alias="maxOutputTokens")


class Approvals(_Section):
    allow: list[str] = Field(
        default_factory=list,
        description="Commands that run without asking (in the sandbox only), as argv patterns "
                    "(settings/approval_rules.py: words match exactly; a lone final `*` allows any further words). "
                    "User config only: a workspace's own config cannot set them.")

    @field_validator("allow")
    @classmethod
    def _every_rule_parses(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            parse_rule(pattern)  # a ValueError is the setting's error, with what is wrong
        return patterns

    def rules(self) -> tuple[AllowRule, ...]:
        return tuple(parse_rule(p) for p in self.allow)


class Settings(_Section):
    model: str = "scripted/demo"
    max_steps: int = Field(40, ge=1, le=10_000, alias="maxSteps")
    reasoning_effort: str | None = Field(None, alias="reasoningEffort")
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    models: dict[str, ModelInfo] = Field(default_factory=dict)
    sampling: Sampling = Field(default_factory=Sampling)
    limits: Limits = Field(default_factory=Limits)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    experimental: Experimental = Field(default_factory=Experimental)
    compaction: Compaction = Field(default_factory=Compaction)
    checkpoints: Checkpoints = Field(default_factory=Checkpoints)
    editor_queries: EditorQuerySettings = Field(default_factory=EditorQuerySettings, alias="editorQueries")
    mcp: McpSettings = Field(default_factory=McpSettings, description="MCP servers whose tools the agent gets.")
    script: str | None = Field(None, description="Reply script for the scripted provider (JSON file).")
    instruction_profile: Literal["default", "compact"] = Field(
        "default", alias="instructionProfile",
        description="default: the full instructions and tool descriptions; compact: four lines of instructions "
                    "and each tool's first sentence without parameter descriptions (about 40% of the tokens), "
                    "for small local models and servers that process prompts slowly.")
    tool_profile: Literal["default", "minimal"] = Field(
        "default", alias="toolProfile",
        description="Which tools the model gets: all defaults, or a minimal read/patch/verify set.")
    sandbox_mode: Literal["read-only", "workspace-write", "danger-full-access"] = Field(
        "workspace-write", alias="sandboxMode",
        description="OS sandbox (bubblewrap) of every command run for the model: read-only, workspace-write "
                    "(the workspace writable except .git/ and .lsp-agent/), or danger-full-access (no sandbox).")
    sandbox_network: bool = Field(False, alias="sandboxNetwork",
                                  description="Let sandboxed commands use the network.")
    sandbox_readable_roots: list[str] = Field(
        default_factory=list, alias="sandboxReadableRoots",
        description="Directories under $HOME that sandboxed commands may read ($HOME is hidden otherwise).")
    approval_policy: Literal["untrusted", "on-request", "on-failure", "never"] = Field(
        "on-request", alias="approvalPolicy",
        description="When the user approves a call first: untrusted (every command), on-request (only what "
                    "would leave the sandbox or may change things through MCP), on-failure (also offer to re-run "
                    "a command that failed in the sandbox without it), never (never ask; such calls are refused "
                    "or run without the escalation). See docs/security.md.")
    mode: Literal["agent", "plan", "ask"] = Field(
        "agent",
        description="The kind of work asked for: agent (edit and run under the policies above), plan (read, run "
                    "read-only commands, end with a plan), ask (read and answer; no command runs). An editor sets "
                    "it with its mode picker, together with the read-only sandbox plan and ask need.")
    approval_timeout_s: float = Field(
        300, gt=0, le=86_400, alias="approvalTimeoutS",
        description="Seconds to wait for an approval; no answer by then is a deny.")
    approvals: Approvals = Field(default_factory=Approvals,
                                 description="The user's standing approvals (user config only).")

    @model_validator(mode="after")
    def _plan_and_ask_change_nothing(self) -> Settings:
        # Plan and Ask promise an unchanged workspace whichever layer named them (a user's file, a flag):
        # the read-only sandbox and no approval that could lift it come with them, as in settings/modes.py.
        if self.mode != "agent":
            self.sandbox_mode = "read-only"
            self.approval_policy = "never"
        return self


#: Settings a workspace's own config file may not set even when the user trusts the workspace: a
#: repository must not widen the sandbox its commands run in nor change approvals (only the user,
#: an editor option or a CLI flag can), nor shrink the sensitive paths it may not plant unasked.
#: Dotted names reach into sections ("tools.x"). Anything not on the workspace allow-list
#: (settings/workspace_gate.py) is ignored until trusted anyway.
SANDBOX_KEYS = ("sandbox_mode", "sandboxMode", "sandbox_network", "sandboxNetwork",
                "sandbox_readable_roots", "sandboxReadableRoots", "approval_policy", "approvalPolicy",
                "approvals", "tools.sensitive_paths", "mode",
                # a repository must never name a program the harness starts outside the sandbox
                *(f"{section}.{name}" for section in ("editorQueries", "editor_queries")
                  for name in ("languageServers", "language_servers")))


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "lsp-agent" / "config.toml"


def workspace_config_path(root: Path) -> Path:
    return root / ".lsp-agent" / "config.toml"


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class ConfigError(Exception):
    pass


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def _editor_query_defaults() -> dict[str, Any]:
    """`editorQueries.<name>` → its default, under the field name and its alias (the workspace gate
    lets a repository's config only turn these down)."""
    out: dict[str, Any] = {}
    for name, info in EditorQuerySettings.model_fields.items():
        value = info.get_default(call_default_factory=True)
        out[f"editorQueries.{name}"] = value
        if info.alias:
            out[f"editorQueries.{info.alias}"] = value
    return out


def inspect_workspace(root: Path, *, editor_distrusts: bool = False) -> workspace_trust.WorkspaceView:
    """What the workspace's own config sets, what of it is gated, and whether the user trusted it
    (`editor_distrusts`: the editor does not trust the folder, so no stored trust applies)."""
    return workspace_trust.inspect(
        root, never=SANDBOX_KEYS, limit_defaults={**{name: f.default for name, f in Limits.model_fields.items()},
                                                  **_editor_query_defaults()},
        max_steps_default=Settings.model_fields["max_steps"].default, editor_distrusts=editor_distrusts)


def load_settings(workspace: Path | None, *layers: dict[str, Any],
                  base_urls: dict[str, str] | None = None,
                  view: workspace_trust.WorkspaceView | None = None) -> Settings:
    """Merge the files and the given layers (lowest first) and validate once.

    The workspace's file contributes what `view` (default: the workspace inspected now) says applies:
    its safe settings, or all but the never-list once the user trusted exactly this content.

    `base_urls` fills a provider section that sets other fields but no base URL (e.g.
    `--config providers.X.idleTimeoutS=10` beside `--base-url`, or a tweak of a built-in
    provider): name -> URL, with "*" for any provider."""
    merged: dict[str, Any] = {}
    if workspace is not None:
        view = view or inspect_workspace(workspace)
        if view.error is not None:
            raise ConfigError(view.error)
        merged = copy.deepcopy(view.layer)
    merged = deep_merge(merged, _read_toml(user_config_path()))
    for layer in layers:
        merged = deep_merge(merged, layer)
    providers = merged.get("providers")
    if base_urls and isinstance(providers, dict):
        for name, entry in providers.items():
            url = base_urls.get(name) or base_urls.get("*")
            if isinstance(entry, dict) and url and "baseUrl" not in entry and "base_url" not in entry:
                entry["baseUrl"] = url
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe_invalid(exc)) from exc


def describe_invalid(exc: ValidationError) -> str:
    """One line per invalid setting (`maxSteps: Input should be a valid integer (got 'x')`), without
    pydantic's class names and documentation URLs."""
    lines = []
    for error in exc.errors(include_url=False):
        name = ".".join(str(part) for part in error["loc"]) or "(settings)"
        got = error.get("input")
        shown = f" (got {got!r})" if isinstance(got, str | int | float | bool) else ""
        lines.append(f"{name}: {error['msg']}{shown}")
    return "invalid settings: " + "; ".join(lines)
