"""A sandboxed command holds no capability, whoever runs the harness: root or an unprivileged user.

Each test is the attack: a hostile repository ships `escape_root.py` and the scripted model runs it
through the real `lsp-agent run` loop (run_command). The script tries to unmount the tmpfs over
$HOME and read the canary key under it, remount / read-write and write a canary outside, read a
file only its (other) owner may read, make device nodes, signal or trace the server, and, in a
user namespace of its own, unmount or cover the read-only `.git` and get around it with a bind.
Every canary must stay where it is, unread and unchanged, and the run must end normally.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lsp_agent.sandbox import Sandbox, bwrap, policy
from tests.providers.loopback import AgentRun, LoopbackServer, Reply, turn
from tests.security.conftest import needs_bwrap
from tests.security.identity import ROOT, UNPRIVILEGED, Identity, run_cli, scratch, skip_unless_possible
from tests.security.kit import CANARY_FILE, CANARY_LSP_KEY, FINAL, tree_digest

pytestmark = needs_bwrap

ESCAPE = Path(__file__).with_name("escape_root.py")
CANARY_FOREIGN = "canary-foreign-secret-4d07aa"
CANARY_GIT = "[core]\n\t# canary-git-config-0b9e13\n"
FOREIGN_UID = 12345  # neither root nor nobody: only its owner may read the file
IDENTITIES = [pytest.param(ROOT, id="root"), pytest.param(UNPRIVILEGED, id="unprivileged")]


@dataclass
class Scene:
    identity: Identity
    workspace: Path
    home: Path
    outside: Path
    foreign: Path
    state: Path
    config: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {"HOME": str(self.home), "LSP_AGENT_STATE_DIR": str(self.state),
               "XDG_CONFIG_HOME": str(self.config), "LSP_AGENT_API_KEY": CANARY_LSP_KEY}
        env.update(extra)
        return env


def make_scene(base: Path, identity: Identity) -> Scene:
    ws, home, outside, state, config = (base / n for n in ("ws", "home", "outside", "state", "config"))
    for d in (ws / ".git", home / ".ssh", outside, state, config):
        d.mkdir(parents=True)
    (ws / ".git" / "config").write_text(CANARY_GIT, encoding="utf-8")
    shutil.copy(ESCAPE, ws / "escape_root.py")
    key = home / ".ssh" / "id_rsa"
    key.write_text(f"-----BEGIN KEY-----\n{CANARY_FILE}\n", encoding="utf-8")
    key.chmod(0o600)
    (home / ".ssh").chmod(0o700)
    (outside / "precious.txt").write_text("do not touch\n", encoding="utf-8")
    foreign = base / "foreign-secret"
    foreign.write_text(CANARY_FOREIGN + "\n", encoding="utf-8")
    if os.getuid() == 0:
        foreign.chmod(0o600)
        os.chown(foreign, FOREIGN_UID, FOREIGN_UID)
    else:
        foreign.chmod(0o000)  # a user cannot give a file away: one its owner may not read stands in
    identity.own(ws, home, outside, state, config)
    return Scene(identity, ws, home, outside, foreign, state, config)


@pytest.fixture(params=IDENTITIES)
def scene(request: pytest.FixtureRequest) -> Iterator[Scene]:
    identity: Identity = request.param
    if os.getuid() != 0 and identity.uid == 0:
        pytest.skip("the root leg needs root")
    skip_unless_possible(identity)
    with scratch() as base:
        yield make_scene(base, identity)


def outcomes(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        if line.startswith("ESCAPE "):
            _, name, outcome = line.split(" ", 2)
            found[name] = outcome
    return found


def tool_outputs(run: AgentRun) -> list[str]:
    return [str(u["part"]["state"].get("output", "")) for u in run.of("tool_use")]


async def play(scene: Scene, server: LoopbackServer, commands: list[str], *extra: str,
               env: dict[str, str] | None = None) -> AgentRun:
    for n, command in enumerate(commands):
        server.queue(Reply(chunks=[turn("chat", call=(f"call_{n}", "run_command", {"command": command}))],
                           chunk_delay=0))
    server.queue(Reply(chunks=[turn("chat", text=FINAL)], chunk_delay=0))
    run, _ = await run_cli(scene.identity, "Escape.", scene.workspace, server.url, *extra,
                           env=env or scene.env())
    assert run.finish["stopReason"] == "final", run.stderr
    return run


def assert_no_canary_left(run: AgentRun, server: LoopbackServer) -> None:
    places = {"events": json.dumps(run.events), "stderr": run.stderr}
    places.update({f"request {n}": r.body.decode("utf-8", "replace") for n, r in enumerate(server.requests)})
    for where, text in places.items():
        for canary in (CANARY_FILE, CANARY_FOREIGN, CANARY_LSP_KEY):
            assert canary not in text, f"{canary} reached the {where}"


def aim(scene: Scene) -> str:
    """Point the script at the canaries (a file in the workspace: the argument rules keep paths
    outside it off a command line); returns the digest of what must not change."""
    (scene.workspace / "targets.json").write_text(json.dumps({
        "home": str(scene.home), "outside": str(scene.outside), "foreign": str(scene.foreign),
        "pid": os.getpid()}), encoding="utf-8")
    scene.identity.own(scene.workspace / "targets.json")
    return tree_digest(scene.outside) + tree_digest(scene.home)


def assert_escape_failed(scene: Scene, output: str, before: str) -> None:
    got = outcomes(output)
    assert got.get("done") == "yes", output
    assert got["uid"] == str(scene.identity.uid)
    # No capability in any set: nothing to unmount, remount, mknod or trace with.
    caps = dict(item.split("=") for item in got["capabilities"].split(","))
    assert caps["CapEff"] == caps["CapPrm"] == caps["CapAmb"] == "0" * 16, got["capabilities"]
    for name in ("umount-home", "umount-git", "remount-root-rw", "remount-root-rw-plain", "remount-outside-rw",
                 "ptrace-server", "nested-umount-home", "nested-umount-git", "nested-bind-workspace",
                 "nested-remount-root-rw", "nested-remount-git-rw"):
        assert got[name] != "ok", f"{name}: {got[name]}"
    for name in ("read-key-after-umount", "nested-read-key", "read-foreign"):
        assert not got[name].startswith("read:"), f"{name}: {got[name]}"
    for name in ("write-outside", "write-git", "nested-write-outside", "nested-write-git-through-bind",
                 "nested-write-git-through-rbind", "nested-write-git-after-remount"):
        assert got[name] != "written", f"{name}: {got[name]}"
    assert got["mknod-disk"] != "made" and got["mknod-mem"] != "made"
    assert not [p for p in scene.workspace.iterdir() if stat.S_ISBLK(p.lstat().st_mode)
                or stat.S_ISCHR(p.lstat().st_mode)]
    # The server and this test are out of reach: not even visible to signal.
    assert got["signal-server"] == "ESRCH" and got["signal-scan"] == "found:0", got
    # What the attack could change in its own namespaces never reached the real files.
    assert (scene.workspace / ".git" / "config").read_text(encoding="utf-8") == CANARY_GIT
    assert tree_digest(scene.outside) + tree_digest(scene.home) == before


async def test_a_sandboxed_command_holds_no_capability(scene: Scene, server: LoopbackServer) -> None:
    before = aim(scene)
    run = await play(scene, server, ["python3 escape_root.py"])
    assert_escape_failed(scene, tool_outputs(run)[0], before)
    assert_no_canary_left(run, server)


def _only_the_capability_drop(as_root: bool) -> list[str]:
    return ["--cap-drop", "ALL"]


async def test_without_a_user_namespace_root_still_holds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the kernel gives root no user namespace, `--unshare-user-try` falls back silently: the
    # capability drop alone must hold (Sandbox.prepare, the flags as they are then).
    if os.getuid() != 0:
        pytest.skip("root's leg")
    with scratch() as base:
        scene = make_scene(base, ROOT)
        before = aim(scene)
        monkeypatch.setattr(bwrap, "privilege_flags", _only_the_capability_drop)
        monkeypatch.setenv("HOME", str(scene.home))
        prepared = Sandbox(scene.workspace.resolve(), "workspace-write").prepare(
            ["python3", "escape_root.py"], scene.workspace)
        assert "--unshare-user-try" not in prepared.argv
        done = await asyncio.to_thread(subprocess.run, prepared.argv, env=prepared.env, capture_output=True,
                                       text=True, timeout=120, check=False)
        assert_escape_failed(scene, done.stdout + done.stderr, before)
        for canary in (CANARY_FILE, CANARY_FOREIGN):
            assert canary not in done.stdout + done.stderr


HOME_PROBE = ("python3 -c \"import os; h = os.environ['HOME']; open(os.path.join(h, 'probe'), 'w').write('x'); "
              "print('HOME', h, sorted(os.listdir(h)))\"")


@pytest.mark.parametrize("home_kind", ["missing", "a-file", "unset"])
async def test_commands_run_without_a_home_to_hide(scene: Scene, server: LoopbackServer, home_kind: str) -> None:
    # `nobody`'s HOME is /nonexistent; minimal containers set none or a file: commands still run, in a
    # HOME of their own that exists, is writable, and is gone with the sandbox.
    missing = scene.home.parent / "nonexistent"
    a_file = scene.home.parent / "home-file"
    a_file.write_text("not a directory\n", encoding="utf-8")
    env = scene.env()
    if home_kind == "missing":
        env["HOME"] = str(missing)
    elif home_kind == "a-file":
        env["HOME"] = str(a_file)
    else:
        del env["HOME"]
    child_env = {k: v for k, v in scene.identity.env().items() if k != "HOME"}
    run = await play(scene, server, [HOME_PROBE], env={**child_env, **env})
    output = tool_outputs(run)[0]
    assert output.startswith("OK: exit=0"), output
    shown = next(line for line in output.splitlines() if line.startswith("HOME "))
    home, listing = shown.split(" ", 2)[1:]
    if home_kind == "unset" and scene.identity.uid == 0:
        # root's unset HOME is its account's, /root: hidden as usual, toolchains under it bound back
        assert home == os.path.expanduser("~") and "probe" in listing, output
    else:
        assert (home, listing) == ("/tmp/home", "['probe']"), output  # exists, writable, held nothing
    assert not missing.exists()
    assert a_file.read_text(encoding="utf-8") == "not a directory\n"


async def test_the_accounts_home_stays_hidden_when_home_names_another(monkeypatch: pytest.MonkeyPatch) -> None:
    # root started with HOME=/elsewhere (sudo, CI): root still owns /root in the sandbox and would
    # read its keys there unless that home is hidden as well.
    with scratch() as base:
        account, elsewhere, ws = base / "account", base / "elsewhere", base / "ws"
        for d in (account / ".ssh", elsewhere, ws):
            d.mkdir(parents=True)
        (account / ".ssh" / "id_rsa").write_text(CANARY_FILE + "\n", encoding="utf-8")
        monkeypatch.setattr(policy, "_account_home", lambda uid: str(base / "account"))
        monkeypatch.setenv("HOME", str(elsewhere))
        prepared = Sandbox(ws.resolve(), "workspace-write").prepare(
            ["python3", "-c", f"print(open({str(account / '.ssh' / 'id_rsa')!r}).read())"], ws)
        done = await asyncio.to_thread(subprocess.run, prepared.argv, env=prepared.env, capture_output=True,
                                       text=True, timeout=120, check=False)
        assert done.returncode != 0 and "No such file or directory" in done.stderr, done.stdout + done.stderr
        assert CANARY_FILE not in done.stdout
