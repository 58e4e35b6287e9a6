"""The environment of every process started for the model: built from an allow-list.

Nothing of the server's environment passes unless it is named here, so a credential under any
name (API keys, cloud tokens, SSH agent sockets) never reaches a command. git gets config that
disables everything a repository's own config could make it run.
"""

from __future__ import annotations

import os

# Names a toolchain needs to find itself, and locale/terminal facts; never credentials.
ALLOWED_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC", "TZ",
    "USER", "LOGNAME", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV", "CONDA_PREFIX", "JAVA_HOME",
    "GOROOT", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
})

#: git configuration forced on every git the harness starts (directly or through a child):
#: command-line scope, so it wins over the repository's .git/config.
GIT_SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("diff.external", ""),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("gpg.program", "false"),
    ("sequence.editor", "false"),
)


def git_config_env() -> dict[str, str]:
    env = {"GIT_CONFIG_COUNT": str(len(GIT_SAFE_CONFIG)), "GIT_TERMINAL_PROMPT": "0",
           "GIT_PAGER": "cat", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
    for n, (key, value) in enumerate(GIT_SAFE_CONFIG):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


def command_env(extra: dict[str, str] | None = None, source: dict[str, str] | None = None) -> dict[str, str]:
    """A fresh environment: allow-listed names from `source` (default: ours), then fixed values."""
    origin = os.environ if source is None else source
    env = {k: v for k, v in origin.items() if k in ALLOWED_NAMES}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = origin.get("HOME") or os.path.expanduser("~")
    env["TMPDIR"] = "/tmp"
    env["TERM"] = "dumb"
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(git_config_env())
    if extra:
        env.update(extra)
    return env
