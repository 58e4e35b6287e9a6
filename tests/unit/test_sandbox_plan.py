"""The bubblewrap command line: what is hidden, what is bound back, in which order."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lsp_agent.sandbox.bwrap import PRIVATE_HOME, MountPlan, bwrap_argv, privilege_flags, toolchain_paths
from lsp_agent.sandbox.env import command_env
from lsp_agent.sandbox.policy import home_to_hide


def _pairs(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_mount_order_hides_home_and_tmp_then_binds_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tool = home / ".pyenv"
    root = tmp_path / "ws"
    for d in (tool, root / ".git", root / ".lsp-agent"):
        d.mkdir(parents=True)
    plan = MountPlan(root=root, mode="workspace-write", network=False, home=home, readable=(tool,),
                     masked=(), protected=(root / ".git", root / ".lsp-agent"))
    argv = bwrap_argv("bwrap", plan, root, ["python3", "-c", "pass"])
    assert argv[-4:] == ["--", "python3", "-c", "pass"]
    assert {"--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"} <= set(argv)
    order = [argv.index(x) for x in ("/", "/tmp", str(home), str(tool), str(root))]
    # root ro, /tmp tmpfs, $HOME tmpfs (made again on the private /tmp, where it lives here), then the
    # toolchain under it and the workspace
    assert order == sorted(order)
    assert _pairs(argv, "--bind") == [str(root)]
    assert _pairs(argv, "--ro-bind")[-2:] == [str(root / ".git"), str(root / ".lsp-agent")]
    assert argv.index(str(root / ".git")) > argv.index(str(root))


def test_read_only_mode_and_network_flag(tmp_path: Path) -> None:
    plan = MountPlan(root=tmp_path, mode="read-only", network=True, home=None)
    argv = bwrap_argv("bwrap", plan, tmp_path, ["ls"])
    assert "--unshare-net" not in argv and "--bind" not in argv
    assert str(tmp_path) in _pairs(argv, "--ro-bind")


def test_toolchain_paths_never_bind_home_itself(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "tools" / "bin").mkdir(parents=True)
    program = home / "tools" / "bin" / "mytool"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    found = toolchain_paths(["mytool"], f"{home / 'tools' / 'bin'}:{home}:/usr/bin", home)
    assert home / "tools" in found  # the resolved program's prefix
    assert home not in found and Path("/usr/bin") not in found  # not hidden: no need to bind


def test_a_program_given_by_path_binds_nothing_back(tmp_path: Path) -> None:
    # A repository's verify command names a program under $HOME by path, to have its prefix (and
    # whatever else lives there: credentials) shown to the sandbox.
    home = tmp_path / "home"
    program = home / ".cargo" / "bin" / "cargo"
    program.parent.mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("token = 'canary'\n")
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    found = toolchain_paths([str(program)], "/usr/bin", home)
    assert not [p for p in found if home in (p, *p.parents)], found


def test_the_environment_is_an_allow_list() -> None:
    env = command_env(source={"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-x", "LANG": "C.UTF-8",
                              "SSH_AUTH_SOCK": "/run/agent", "HOME": "/home/u", "AWS_PROFILE": "p"})
    assert env["PATH"] == "/usr/bin" and env["LANG"] == "C.UTF-8" and env["HOME"] == "/home/u"
    assert not {"OPENAI_API_KEY", "SSH_AUTH_SOCK", "AWS_PROFILE"} & set(env)
    keys = [env[f"GIT_CONFIG_KEY_{n}"] for n in range(int(env["GIT_CONFIG_COUNT"]))]
    assert {"core.fsmonitor", "core.hooksPath", "diff.external"} <= set(keys)


def test_control_characters_in_paths_are_refused_and_escaped_for_display(tmp_path: Path) -> None:
    import pytest

    from lsp_agent.core.paths import PathDenied, printable, resolve_in_root

    for bad in ("a\nb", "a\rb", "a\x1bb", "a\x7fb", "a\u2028b", "a\x85b"):
        with pytest.raises(PathDenied, match="control character"):
            resolve_in_root(tmp_path, bad)
    assert resolve_in_root(tmp_path, "ok name.txt") == tmp_path.resolve() / "ok name.txt"
    assert printable("x\ny\u2028") == "x\\x0ay\\u2028"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_toolchain_under_tmp_stays_visible_inside_the_private_tmp(tmp_path: Path) -> None:
    """A venv made in a temp checkout (CI clones anywhere, /tmp included) must still run its commands."""
    tool = tmp_path / "venv" / "bin"
    tool.mkdir(parents=True)
    program = tool / "hello"
    program.write_text("#!/bin/sh\necho hello from the toolchain\n", encoding="utf-8")
    program.chmod(0o755)
    root = tmp_path / "ws"
    root.mkdir()
    plan = MountPlan(root=root, mode="workspace-write", network=False, home=None, readable=(tool.parent,),
                     masked=(), protected=())
    done = subprocess.run(bwrap_argv("bwrap", plan, root, [str(program)]), capture_output=True, text=True,
                          timeout=30)
    if "Operation not permitted" in done.stderr or "No permissions" in done.stderr:
        pytest.skip(f"bwrap cannot create namespaces here: {done.stderr.strip()}")
    assert (done.returncode, done.stdout) == (0, "hello from the toolchain\n"), done.stderr


def _plan(root: Path, home: Path | None) -> MountPlan:
    return MountPlan(root=root, mode="workspace-write", network=False, home=home)


def test_home_outside_tmp_is_hidden_before_the_private_tmp(tmp_path: Path) -> None:
    home = Path("/var/lib/someone")
    argv = bwrap_argv("bwrap", _plan(tmp_path, home), tmp_path, ["true"])
    assert _pairs(argv, "--tmpfs").index(str(home)) < _pairs(argv, "--tmpfs").index("/tmp")
    assert "--dir" not in argv


def test_no_home_to_hide_gives_the_command_a_private_one(tmp_path: Path) -> None:
    argv = bwrap_argv("bwrap", _plan(tmp_path, None), tmp_path, ["true"])
    assert _pairs(argv, "--dir") == [str(PRIVATE_HOME)]
    assert argv.index(str(PRIVATE_HOME)) > argv.index("/tmp")  # made on the private /tmp, not the root


@pytest.mark.parametrize("as_root", [True, False])
def test_root_keeps_no_capability(as_root: bool) -> None:
    flags = privilege_flags(as_root)
    if as_root:
        assert flags[flags.index("--cap-drop") + 1] == "ALL"
    else:
        assert flags == []  # bubblewrap drops an unprivileged caller's capabilities itself


def test_home_to_hide_only_an_existing_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for raw in (str(tmp_path / "missing"), str(a_file), "/"):
        monkeypatch.setenv("HOME", raw)
        assert home_to_hide() is None, raw
    monkeypatch.setenv("HOME", str(tmp_path))
    assert home_to_hide() == tmp_path.resolve()
