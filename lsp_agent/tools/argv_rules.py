"""Argument rules for the allow-listed programs, kept even inside the OS sandbox.

The sandbox contains what a command can reach; these rules refuse the options that turn a
read-only program into a program launcher or point it at someone else's configuration, each
with a message that says what to do instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from lsp_agent.settings.config import Settings, ToolSettings

# Refused whatever the configuration says: committing and publishing are left to the user.
GIT_NEVER = frozenset({"commit", "push"})
# git options that make a read-only subcommand write files, run configured programs, read
# outside the repository or take configuration from the command line.
_GIT_RISKY = ("--output", "--ext-diff", "--textconv", "--exec", "--upload-pack", "--receive-pack",
              "--no-index", "--config", "--open-files-in-pager", "--run", "--git-dir", "--work-tree")
_GIT_RISKY_SHORT = frozenset({"-c", "-O"})
# ripgrep options that run another program on every file, or read a config from elsewhere.
_RG_RISKY = ("--pre", "--pre-glob", "--search-zip", "--config")
_RG_RISKY_SHORT = frozenset({"-z"})
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
# Programs whose non-option arguments are all paths: those must stay inside the workspace.
_PATH_PROGRAMS = frozenset({"cat", "ls"})


def _option_name(arg: str) -> str:
    return arg.split("=", 1)[0]


def _outside(arg: str, root: Path) -> bool:
    if arg.startswith("~"):
        return True
    joined = os.path.normpath(os.path.join(root, arg))
    return joined != str(root) and not joined.startswith(str(root) + os.sep)


def _git(argv: list[str], tools: ToolSettings) -> str | None:
    sub = argv[1] if len(argv) > 1 else ""
    if sub in GIT_NEVER:
        return (f"'git {sub}' is never run by the agent: committing and pushing are left to the "
                "user. Finish the change and say it is ready to commit.")
    if sub == "config":
        return ("'git config' is never run by the agent: the repository's configuration belongs to the "
                "user. Read it with read_file if you must know a value.")
    if sub.startswith("-"):
        return (f"git options before the subcommand ('{sub}') are not allowed (no -c, -C, --git-dir, "
                f"--exec-path); the subcommand must come first, one of: {', '.join(tools.git_read_only)}.")
    if sub not in tools.git_read_only:
        shown = f"'git {sub}'" if sub else "git without a subcommand"
        return (f"{shown} is not allowed (aliases neither); only read-only subcommands: "
                f"{', '.join(tools.git_read_only)}.")
    for arg in argv[2:]:
        if arg == "--":
            break
        name = _option_name(arg)
        if name.startswith(_GIT_RISKY) or name in _GIT_RISKY_SHORT:
            return (f"the git option '{name}' can run programs, write files or read outside the workspace "
                    "and is not allowed. Use the plain subcommand (external diff and textconv are always off).")
    return None


def _rg(argv: list[str]) -> str | None:
    for arg in argv[1:]:
        if arg == "--":
            break
        name = _option_name(arg)
        if name.startswith(_RG_RISKY) or name in _RG_RISKY_SHORT:
            return (f"the rg option '{name}' runs other programs or reads configuration from elsewhere and is "
                    "not allowed. Search plain files with rg, or use search_code.")
    return None


def check_argv(argv: list[str], tools: ToolSettings, root: Path | None = None) -> str | None:
    """Why this argv may not run (a refusal message), or None when it is allowed."""
    program = argv[0]
    if "/" in program or "\\" in program:
        return (f"'{program}' is a path; give the bare program name from the allow-list "
                f"({', '.join(tools.allowed_programs)}).")
    if program not in tools.allowed_programs:
        return (f"'{program}' is not an allowed program. Allowed: {', '.join(tools.allowed_programs)}. "
                "To change files use apply_patch or write_file; to run the checks use verify_project.")
    bad = next((a for a in argv if _CONTROL.search(a)), None)
    if bad is not None:
        return (f"the argument {bad!r} contains a control character; arguments are plain text (newlines "
                "and tabs only inside code given to an interpreter).")
    if program == "git":
        return _git(argv, tools)
    if program == "rg":
        return _rg(argv)
    if program in _PATH_PROGRAMS and root is not None:
        for arg in argv[1:]:
            if not arg.startswith("-") and _outside(arg, root):
                return (f"'{arg}' is outside the workspace; {program} only reads workspace paths (relative, "
                        "without '..' leaving it). Use read_file or list_dir on workspace files.")
    return None


def command_refusal(argv: Sequence[str], settings: Settings, root: Path) -> str | None:
    """The command policy a session's controller applies: these rules under the settings in force."""
    return check_argv(list(argv), settings.tools, root.resolve())
