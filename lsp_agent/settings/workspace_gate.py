"""Which settings a repository's own `.lsp-agent/config.toml` may set before the user trusts it.

The repository is untrusted input. Its config contributes, untrusted, only what this allow-list
names: settings that start nothing, reach no endpoint, send no key, widen no allow-list and change
no approval. Everything else — including any field added to the settings later — is gated: ignored
until the user trusts the workspace. A separate never-list (config.SANDBOX_KEYS) is dropped even
from a trusted workspace.

A leaf module (no lsp_agent imports): config.py passes in the never-list and the limit defaults.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The settings a workspace may set while untrusted, by dotted path (both spellings where the
#: setting has a camelCase alias). Why each is safe:
#:  tools.verify           its commands run in the same sandbox as the model's, are shown in
#:                         verify_project's result, and are no more than running the repository's
#:                         own tests, which verification does anyway;
#:  tools.generated_globs  only marks files read_file reports as generated;
#:  instructionProfile /
#:  toolProfile            how much of the instructions and which built-in tools the model gets;
#:  compaction.*           when and how old context is folded or compacted (local bookkeeping).
ALWAYS_SAFE = frozenset({
    "tools.verify", "tools.generated_globs",
    "instructionProfile", "instruction_profile", "toolProfile", "tool_profile",
    "compaction",
})

#: Settings a workspace may only lower (a limit it tightens applies, one it lifts is gated):
#: every limit and the step budget.
TIGHTEN_ONLY_SECTIONS = frozenset({"limits"})
TIGHTEN_ONLY_KEYS = frozenset({"maxSteps", "max_steps"})
#: The limits whose tight side is the larger value: a threshold that, set lower, spends more of the
#: user's budget. A smaller `context_pack_min_context` puts the long-task pack into the instructions
#: of models with less room for it; a smaller `escalate_after_failures` raises the (billed)
#: reasoning effort sooner; a shorter `session_lease_s` lets another process take a live session over
#: sooner. A workspace may only raise these.
RAISE_ONLY_LIMITS = frozenset({"context_pack_min_context", "escalate_after_failures", "session_lease_s"})

#: Sections a workspace may only turn down: switch off, disable kinds, shorten waits and bounds.
TURN_DOWN_ONLY_SECTIONS = frozenset({"editorQueries", "editor_queries"})


@dataclass(frozen=True)
class Gated:
    """One workspace setting that is ignored until the workspace is trusted."""

    setting: str
    effect: str


@dataclass
class Split:
    safe: dict[str, Any] = field(default_factory=dict)  # what applies untrusted
    trusted: dict[str, Any] = field(default_factory=dict)  # what applies once trusted (safe included)
    gated: list[Gated] = field(default_factory=list)  # what trust would add, in the user's words
    refused: list[str] = field(default_factory=list)  # never applies from a workspace


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pop_dotted(tree: dict[str, Any], dotted: str) -> bool:
    node: Any = tree
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return False
    if isinstance(node, dict) and parts[-1] in node:
        del node[parts[-1]]
        return True
    return False


def _put(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def split(raw: Mapping[str, Any], *, never: Iterable[str], limit_defaults: Mapping[str, Any],
          max_steps_default: int) -> Split:
    """The workspace config cut into what applies untrusted, what applies trusted, and what is gated."""
    trusted = copy.deepcopy(dict(raw))
    refused = sorted(name for name in never if _pop_dotted(trusted, name))
    out = Split(trusted=trusted, refused=refused)
    for key, value in trusted.items():
        if key in ALWAYS_SAFE:
            out.safe[key] = copy.deepcopy(value)
        elif key in TIGHTEN_ONLY_KEYS:
            _tighten(out, [key], value, max_steps_default)
        elif key in TURN_DOWN_ONLY_SECTIONS and isinstance(value, dict):
            _turn_down(out, key, value, limit_defaults)
        elif key in TIGHTEN_ONLY_SECTIONS and isinstance(value, dict):
            for name, item in value.items():
                _tighten(out, [key, name], item, limit_defaults.get(name), upward=name in RAISE_ONLY_LIMITS)
        elif isinstance(value, dict) and any(name.startswith(f"{key}.") for name in ALWAYS_SAFE):
            for name, item in value.items():
                if f"{key}.{name}" in ALWAYS_SAFE:
                    _put(out.safe, [key, name], copy.deepcopy(item))
                else:
                    out.gated.extend(describe([key, name], item))
        else:
            out.gated.extend(describe([key], value))
    out.gated.sort(key=lambda g: g.setting)
    return out


def _tighten(out: Split, path: list[str], value: Any, default: Any, upward: bool = False) -> None:
    """Apply a limit that is at least as tight as its default; gate one that loosens it (`upward`:
    for this limit the larger value is the tighter one)."""
    number, limit = _number(value), _number(default)
    tighter = number is not None and limit is not None and (number >= limit if upward else number <= limit)
    if tighter:
        _put(out.safe, path, value)
    else:
        shown = f" from {default!r}" if default is not None else ""
        verb = "lowers" if upward else "raises"
        out.gated.append(Gated(".".join(path), f"{verb} {'.'.join(path)}{shown} to {value!r}"))


def _turn_down(out: Split, section: str, value: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    """The editor-query section of an untrusted workspace: off switches and tighter numbers apply;
    anything that would make the agent ask the editor more, or show more, waits for trust."""
    for name, item in value.items():
        key = f"editorQueries.{name}"
        if key in defaults and _turns_down(name, defaults[key], item):
            _put(out.safe, [section, name], copy.deepcopy(item))
        else:
            out.gated.append(Gated(f"{section}.{name}", f"sets {section}.{name} to {_short(item)}"))


def _turns_down(name: str, default: Any, value: Any) -> bool:
    if isinstance(default, bool):
        return bool(value is False)
    if name in ("disabledKinds", "disabled_kinds"):  # the kinds switched off: more of them only removes tools
        return isinstance(value, list) and all(isinstance(k, str) for k in value)
    if isinstance(default, list):  # any other list (the language servers to start) adds, never turns down
        return False
    if name in ("outside_workspace", "outsideWorkspace"):
        return bool(value == "refuse")
    number, limit = _number(value), _number(default)
    return number is not None and limit is not None and number <= limit


def _shell(argv: list[Any]) -> str:
    import shlex

    return " ".join(shlex.quote(str(a)) for a in argv)


def _mcp(name: str, server: Any) -> str:
    if not isinstance(server, dict):
        return f"configures MCP server '{name}'"
    if "url" in server:
        return f"connects to {server['url']!s} (MCP server '{name}')"
    command = [server.get("command", "?"), *(server.get("args") or [])]
    env = server.get("env")
    with_env = f" with environment {', '.join(sorted(map(str, env)))}" if isinstance(env, dict) and env else ""
    return f"starts `{_shell(command)}`{with_env} outside the sandbox (MCP server '{name}')"


def _provider(name: str, key: str, value: Any) -> str:
    if key in ("baseUrl", "base_url"):
        return f"sends provider '{name}' requests, with its API key and the whole conversation, to {value!s}"
    if key in ("apiKeyEnv", "api_key_env"):
        return f"sends the value of ${value!s} as provider '{name}''s API key"
    if key == "headers" and isinstance(value, dict):
        return f"adds headers {', '.join(sorted(map(str, value)))} to provider '{name}' requests"
    return f"sets provider '{name}' {key} to {value!r}"


def _listed(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else repr(value)


_EFFECTS: dict[str, Callable[[Any], str]] = {
    "model": lambda v: f"chooses the model {v!s} (and with it the endpoint the conversation is sent to)",
    "tools.allowed_programs": lambda v: f"lets run_command start {_listed(v)}",
    "tools.git_read_only": lambda v: f"treats git {v!r} as read-only",
    "script": lambda v: f"replays the scripted replies of {v!s}",
}


def describe(path: list[str], value: Any) -> list[Gated]:
    """A gated setting in the words the user should read before trusting it; sections with
    per-entry meaning (MCP servers, providers) are listed entry by entry."""
    dotted = ".".join(path)
    if path == ["mcp"] and isinstance(value, dict):
        servers = value.get("servers")
        rest = [Gated(f"mcp.{k}", f"sets mcp.{k}") for k in value if k != "servers"]
        if isinstance(servers, dict):
            return [*rest, *(Gated(f"mcp.servers.{n}", _mcp(n, s)) for n, s in servers.items())]
        return [*rest, *([Gated("mcp.servers", "configures MCP servers")] if "servers" in value else [])]
    if path == ["providers"] and isinstance(value, dict):
        found: list[Gated] = []
        for name, entry in value.items():
            if isinstance(entry, dict):
                found += [Gated(f"providers.{name}.{k}", _provider(name, k, v)) for k, v in entry.items()]
            else:
                found.append(Gated(f"providers.{name}", f"configures provider '{name}'"))
        return found
    if dotted in _EFFECTS:
        return [Gated(dotted, _EFFECTS[dotted](value))]
    return [Gated(dotted, f"sets {dotted} to {_short(value)}")]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
