"""git run by the harness never executes what a repository's own config names.

The model may have written .git/config earlier (in danger-full-access, or a repository may come
that way): fsmonitor, hooks, pagers, external diff tools, textconv and clean/smudge filter
drivers all run programs. The fixed ones are overridden for every process (sandbox.env); the
drivers a repository names are found here and overridden by name; a config that moves the work
tree elsewhere is refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from lsp_agent.sandbox.env import GIT_SAFE_CONFIG, command_env

#: per-driver keys that name a program, by section
_DRIVER_KEYS = {
    "filter": ("clean", "smudge", "process"),
    "diff": ("textconv", "command"),
    "merge": ("driver",),
}
#: options added right after the subcommand: no external diff, no textconv conversion
_SUBCOMMAND_FLAGS = {"diff": ("--no-ext-diff", "--no-textconv"), "log": ("--no-ext-diff", "--no-textconv"),
                     "show": ("--no-ext-diff", "--no-textconv")}


class GitConfigRefused(OSError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _local_keys(cwd: Path) -> list[str]:
    if shutil.which("git") is None:
        return []
    try:
        done = subprocess.run(["git", "config", "--local", "--includes", "--name-only", "--list"], cwd=cwd,
                              env=command_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []  # not a repository
    return done.stdout.decode("utf-8", "replace").splitlines()


def repository_overrides(cwd: Path) -> list[tuple[str, str]]:
    """Config pairs that disable every driver the repository's config names; blocking.

    Raises GitConfigRefused when the config points the work tree outside the workspace."""
    pairs: list[tuple[str, str]] = []
    for key in _local_keys(cwd):
        section, _, rest = key.partition(".")
        name, _, leaf = rest.rpartition(".")
        section = section.lower()
        if section == "core" and rest.lower() == "worktree":
            raise GitConfigRefused(
                "the repository's .git/config sets core.worktree, which makes git read files outside "
                "the workspace; git commands are refused until the user removes it.")
        if section in _DRIVER_KEYS and name:
            for field in _DRIVER_KEYS[section]:
                if (f"{section}.{name}.{field}", "") not in pairs:
                    pairs.append((f"{section}.{name}.{field}", ""))
            if section == "filter" and leaf.lower() == "required":
                pairs.append((f"filter.{name}.required", "false"))
    return pairs


def _local_config(cwd: Path) -> Path | None:
    """The repository's own config file (the one the model could have written), found like git does."""
    for directory in (cwd, *cwd.parents):
        dot = directory / ".git"
        if dot.is_dir():
            return dot / "config"
        if dot.is_file():
            try:
                line = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if line.startswith("gitdir:"):
                gitdir = Path(line.removeprefix("gitdir:").strip())
                gitdir = gitdir if gitdir.is_absolute() else directory / gitdir
                # A linked worktree's gitdir has a `commondir` whose config is the shared one.
                common = gitdir / "commondir"
                if common.is_file():
                    shared = Path(common.read_text(encoding="utf-8", errors="replace").strip())
                    return (shared if shared.is_absolute() else gitdir / shared) / "config"
                return gitdir / "config"
            return None
    return None


# (config path, mtime_ns, size) -> overrides: asking git costs a process per command otherwise.
_CACHE: dict[tuple[str, int, int], list[tuple[str, str]]] = {}


def _cached_overrides(cwd: Path) -> list[tuple[str, str]]:
    config = _local_config(cwd)
    try:
        info = config.stat() if config is not None else None
    except OSError:
        info = None
    if config is None or info is None:
        return repository_overrides(cwd)  # unusual layout: ask git every time
    key = (str(config), info.st_mtime_ns, info.st_size)
    if key not in _CACHE:
        _CACHE.clear()  # one workspace at a time is the common case; keep it small
        _CACHE[key] = repository_overrides(cwd)
    return _CACHE[key]


def git_env(cwd: Path) -> dict[str, str]:
    """GIT_CONFIG_* entries: the fixed safe config plus the repository's driver overrides.

    Cached by the local config file's mtime and size; an `include` of another file that changes
    later is seen when the local config changes (the included file is outside the sandbox's
    writable area unless it is in the workspace, where .git/ is read-only)."""
    pairs = [*GIT_SAFE_CONFIG, *_cached_overrides(cwd)]
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for n, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


def harden_argv(argv: list[str]) -> list[str]:
    """git argv with external diff and textconv switched off for the subcommands that use them."""
    if len(argv) < 2 or os.path.basename(argv[0]) != "git":
        return argv
    flags = _SUBCOMMAND_FLAGS.get(argv[1], ())
    return [argv[0], argv[1], *flags, *argv[2:]]
