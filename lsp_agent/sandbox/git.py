"""git run by the harness never executes what a repository's configuration names.

The repository is untrusted input: its .git/config, a `config.worktree` (extensions.worktreeConfig),
any file those include (`include.path`, `includeIf`, possibly a file in the workspace the model
can rewrite), and the attributes that pick drivers by path. Every key that makes git start a
program — fsmonitor, hooks, pagers, editors, external and textconv diff, clean/smudge/process
filters, merge drivers, credential helpers, ssh and proxy commands, remote helpers, aliases,
signing programs, tool commands — is overridden at command-line scope, which outranks every file.

Which keys to override is decided by class, not by a list of examples: git itself lists the
configuration it would read (every scope, includes resolved, `--show-scope`), and each key whose
section or last component names a program is neutralised, whatever its subsection. A config that
moves the work tree elsewhere refuses git; so does a configuration git cannot even list in time
(a FIFO where a config file should be), because overrides computed from a partial view would be
no protection at all.

Listing the configuration runs no program (`git config` never starts hooks, filters or a pager
with its output on a pipe), so that one call runs unsandboxed, with the allow-listed environment.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.osfiles.regular import NotRegularFile, kind_of, read_regular_text
from lsp_agent.sandbox.env import GIT_SAFE_CONFIG, command_env

#: How long listing the configuration may take before git is refused (it reads a few small files).
CONFIG_LIST_TIMEOUT_S = 10.0

#: Sections whose every key is neutralised: each value is a program or a command line.
_PROGRAM_SECTIONS = {"alias": "", "pager": "false", "hook": ""}
#: Last key components that name a program (or a command line), in any section and subsection.
_PROGRAM_LEAVES = frozenset({
    "clean", "smudge", "process", "textconv", "command", "cmd", "driver", "external", "helper", "program",
    "fsmonitor", "hookspath", "pager", "editor", "sshcommand", "askpass", "gitproxy", "alternaterefscommand",
    "packobjectshook", "uploadpack", "receivepack", "vcs", "tocmd", "cccmd", "sendmailcmd", "smtpserver",
    "difffilter", "defaultkeycommand", "httpd", "browser",
})
#: Sections where `path` names a program (elsewhere a `path` is a file git reads: include.path).
_PATH_IS_PROGRAM = frozenset({"browser", "man", "difftool", "mergetool"})
#: The harmless value of a neutralised key, where an empty one would not be (it may mean "default").
_NEUTRAL = {
    "core.fsmonitor": "false", "core.hookspath": "/dev/null", "core.pager": "cat", "core.editor": "false",
    "core.sshcommand": "false", "sequence.editor": "false", "gpg.program": "false",
}
#: (section, last component) -> value, for keys that choose whether a program runs rather than name it.
_NEUTRAL_BY_LEAF = {("filter", "required"): "false", ("protocol", "allow"): "never", ("submodule", "update"): "none"}
#: the program keys of a driver, by section: a driver named anywhere gets all of them emptied
_DRIVER_KEYS = {"filter": ("clean", "smudge", "process"), "diff": ("textconv", "command"), "merge": ("driver",)}

#: options added right after the subcommand: no external diff, no textconv conversion
_SUBCOMMAND_FLAGS = {"diff": ("--no-ext-diff", "--no-textconv"), "log": ("--no-ext-diff", "--no-textconv"),
                     "show": ("--no-ext-diff", "--no-textconv")}


class GitConfigRefused(OSError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ConfigEntry:
    scope: str  # system, global, local, worktree, command
    origin: str  # the file it came from ("file:..."), as git prints it
    key: str  # as git prints it: section and last component lower-cased, subsection as written
    value: str


def _parse_listing(raw: bytes) -> list[ConfigEntry]:
    """`git config --list --show-scope --show-origin -z`: scope NUL origin NUL key LF value NUL ..."""
    fields = raw.decode("utf-8", "replace").split("\0")
    entries: list[ConfigEntry] = []
    for index in range(0, len(fields) - 2, 3):
        scope, origin, item = fields[index], fields[index + 1], fields[index + 2]
        key, _, value = item.partition("\n")
        entries.append(ConfigEntry(scope, origin, key, value))
    return entries


def read_config(cwd: Path, timeout_s: float | None = None) -> list[ConfigEntry]:
    """Every configuration entry git would read in `cwd`, includes resolved; blocking. Raises
    GitConfigRefused when git cannot list it in time (a FIFO among the files, or git failing)."""
    timeout_s = CONFIG_LIST_TIMEOUT_S if timeout_s is None else timeout_s
    if shutil.which("git") is None:
        return []
    argv = ["git", "config", "--list", "--show-scope", "--show-origin", "--includes", "-z"]
    try:
        done = subprocess.run(argv, cwd=cwd, env=command_env(), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout_s, check=False, start_new_session=True)
    except subprocess.TimeoutExpired:
        raise GitConfigRefused(
            f"git could not read the repository's configuration within {timeout_s:g} s (a file it includes "
            "may be a FIFO or a device); git is refused until that is fixed.") from None
    except OSError:
        return []
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = detail[-1] if detail else f"exit {done.returncode}"
        raise GitConfigRefused(f"git cannot read the repository's configuration ({why}); git is refused until "
                               "that is fixed.")
    return _parse_listing(done.stdout)


def _neutral_value(key: str) -> str | None:
    """The value that keeps `key` from running a program; None when the key runs none."""
    lowered = key.lower()
    section, _, rest = lowered.partition(".")
    leaf = rest.rpartition(".")[2]
    if lowered in _NEUTRAL:
        return _NEUTRAL[lowered]
    if (section, leaf) in _NEUTRAL_BY_LEAF:
        return _NEUTRAL_BY_LEAF[(section, leaf)]
    if section in _PROGRAM_SECTIONS:
        return _PROGRAM_SECTIONS[section]
    if leaf == "path":
        return "" if section in _PATH_IS_PROGRAM else None
    return "" if leaf in _PROGRAM_LEAVES else None


def overrides_for(entries: list[ConfigEntry]) -> list[tuple[str, str]]:
    """Command-scope pairs neutralising every program-running key of the configuration listed.

    Raises GitConfigRefused when a config moves the work tree outside the workspace."""
    pairs: dict[str, str] = {}
    trusted: list[tuple[str, str]] = []
    for entry in entries:
        if entry.scope == "command":
            continue  # our own overrides (the environment git was listed with)
        if entry.key.lower() == "safe.directory" and entry.scope in ("system", "global"):
            # The user's own answer to "dubious ownership" (a checkout owned by another user): kept
            # for a git that runs where $HOME, and so the user's config, is hidden. git honours it
            # only from the system, global and command scopes, never from the repository.
            trusted.append(("safe.directory", entry.value))
            continue
        lowered = entry.key.lower()
        if lowered == "core.worktree":
            raise GitConfigRefused(
                f"the repository's configuration ({entry.scope}) sets core.worktree, which makes git read files "
                "outside the workspace; git commands are refused until the user removes it.")
        value = _neutral_value(entry.key)
        if value is not None:
            pairs[entry.key] = value
        section, _, rest = entry.key.partition(".")
        name, _, _ = rest.rpartition(".")
        for leaf in _DRIVER_KEYS.get(section.lower(), ()) if name else ():
            # A driver named in any key gets all of its program keys emptied, whatever was set.
            pairs.setdefault(f"{section}.{name}.{leaf}", "")
    return [*pairs.items(), *trusted]


def repository_overrides(cwd: Path) -> list[tuple[str, str]]:
    """Config pairs that disable every program the configuration git reads in `cwd` names; blocking."""
    return overrides_for(read_config(cwd))


def _repository(cwd: Path) -> tuple[Path, Path] | None:
    """(work tree top, git directory) of the repository `cwd` is in, found like git does, without
    starting git."""
    for directory in (cwd, *cwd.parents):
        dot = directory / ".git"
        try:
            info = os.stat(dot)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            return directory, dot
        try:
            line = read_regular_text(dot, 4096).strip()
        except NotRegularFile as exc:
            raise GitConfigRefused(f"{dot} is {exc.kind}; git is refused until that is fixed.") from None
        except OSError:
            return None
        if not line.startswith("gitdir:"):
            return None
        gitdir = Path(line.removeprefix("gitdir:").strip())
        return directory, gitdir if gitdir.is_absolute() else directory / gitdir
    return None


def _git_dir(cwd: Path) -> Path | None:
    found = _repository(cwd)
    return found[1] if found is not None else None


def _common_dir(gitdir: Path) -> Path | None:
    """A linked worktree's shared git directory (its `commondir`), if it has one."""
    try:
        common = read_regular_text(gitdir / "commondir", 4096).strip()
    except OSError:
        return None
    if not common:
        return None
    return Path(common) if Path(common).is_absolute() else gitdir / common


def repository_dirs(cwd: Path) -> list[Path]:
    """The directories git reads for `cwd` that may lie outside it: the work tree's top, the git
    directory and a linked worktree's shared one (resolved, existing). A sandbox that hides the
    rest of the host binds these back read-only, or git would not find the repository at all."""
    try:
        found = _repository(cwd)
    except GitConfigRefused:
        return []
    if found is None:
        return []
    top, gitdir = found
    common = _common_dir(gitdir)
    dirs: list[Path] = []
    for path in (top, gitdir, *([common] if common is not None else [])):
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            continue
        if real.is_dir() and real not in dirs:
            dirs.append(real)
    return dirs


def _config_files(gitdir: Path) -> list[Path]:
    """The repository-scope config files: its own, the shared one of a linked worktree, and the
    per-worktree one (whether or not they exist yet: creating one must be noticed)."""
    files = [gitdir / "config", gitdir / "config.worktree"]
    common = _common_dir(gitdir)
    if common is not None:
        files += [common / "config", common / "config.worktree"]
    return files


def _stamp(path: Path) -> tuple[str, int, int, int] | tuple[str]:
    """What the cache compares per file; refuses a config file that is not a regular file (git
    would block reading a FIFO, and every harness git would stall)."""
    try:
        info = os.stat(path)
    except OSError:
        return (str(path),)
    if not stat.S_ISREG(info.st_mode):
        raise GitConfigRefused(f"{path} is {kind_of(info.st_mode)}, not a regular file; git is refused until "
                               "that is fixed.")
    return (str(path), info.st_mtime_ns, info.st_size, info.st_ino)


@dataclass(frozen=True)
class _Cached:
    gitdir: str | None  # the repository it was listed in (None: outside any)
    stamps: tuple[tuple[str, int, int, int] | tuple[str], ...]
    pairs: list[tuple[str, str]]


# cwd -> what was listed and the state of every file it came from: listing costs a process.
_CACHE: dict[str, _Cached] = {}


def _origin_files(cwd: Path, entries: list[ConfigEntry]) -> list[Path]:
    found: list[Path] = []
    for entry in entries:
        if entry.origin.startswith("file:"):
            path = Path(entry.origin.removeprefix("file:"))
            found.append(path if path.is_absolute() else cwd / path)
    return found


def _cached_overrides(cwd: Path) -> list[tuple[str, str]]:
    gitdir = _git_dir(cwd)
    own = _config_files(gitdir) if gitdir is not None else []
    cached = _CACHE.get(str(cwd))
    # A repository made (or pointed elsewhere) since, nearer than the one listed, is listed anew.
    if cached is not None and cached.gitdir == (None if gitdir is None else str(gitdir)):
        try:
            if tuple(_stamp(Path(s[0])) for s in cached.stamps) == cached.stamps:
                return cached.pairs
        except GitConfigRefused:
            _CACHE.pop(str(cwd), None)
            raise
    for path in own:
        _stamp(path)  # a FIFO config refuses before git would block on it
    entries = read_config(cwd)
    pairs = overrides_for(entries)
    # A repository that includes other files (perhaps in the workspace, perhaps not there yet) is
    # listed again every time: the included files can change without its own config changing.
    includes = any(e.key.lower().startswith(("include.", "includeif.")) and e.scope in ("local", "worktree")
                   for e in entries)
    if not includes:
        files = sorted({*map(str, own), *map(str, _origin_files(cwd, entries))})
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[str(cwd)] = _Cached(None if gitdir is None else str(gitdir), tuple(_stamp(Path(f)) for f in files),
                                   pairs)
    return pairs


def git_env(cwd: Path) -> dict[str, str]:
    """GIT_CONFIG_* entries: the fixed safe config plus the overrides of the configuration git
    would read in `cwd`. Raises GitConfigRefused (see the module's docstring)."""
    pairs = [*GIT_SAFE_CONFIG, *_cached_overrides(cwd)]
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for n, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


def harden_argv(argv: list[str]) -> list[str]:
    """git argv with external diff and textconv switched off for the subcommands that use them,
    and no optional lock (a status never writes the index back)."""
    if len(argv) < 2 or os.path.basename(argv[0]) != "git":
        return argv
    flags = _SUBCOMMAND_FLAGS.get(argv[1], ())
    return [argv[0], "--no-optional-locks", argv[1], *flags, *argv[2:]]
