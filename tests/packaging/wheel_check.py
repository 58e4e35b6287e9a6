"""The built wheel as a user gets it: installed (not editable) into a fresh virtual environment with
nothing else, then run from a directory outside the checkout, so nothing can import the source tree.

    python tests/packaging/wheel_check.py dist/lsp_agent-X-py3-none-any.whl [--venv DIR]

Checks, each a real process of the installed console script:
- the package is imported from the venv's site-packages (not the checkout, not a .pth);
- `lsp-agent --version` prints the wheel's version;
- `lsp-agent demo` (the scripted model) ends `final / verified`;
- `lsp-agent serve` answers an LSP `initialize` over stdio with its serverInfo and capabilities,
  then `shutdown` and `exit` end it with status 0 (the answer comes from initialize_result.json,
  package data: a wheel without it fails here).

Standard library only: .ci/wheel_check.sh runs it with any Python, tests/packaging/test_wheel.py
imports it. pip's cache (~/.cache/pip unless PIP_CACHE_DIR says otherwise) keeps a re-run near a
minute. Exits 1 with the failed check on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

#: generous: a loaded 2-core machine can take tens of seconds to start the server
TIMEOUT_S = 180


class CheckFailed(Exception):
    pass


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a user who has only the venv: no PYTHONPATH or venv of the caller, state
    and config under `home` (the user's own config must not change what the checks see)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONSAFEPATH")
           and not k.startswith("LSP_AGENT_")}
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    env.update(XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "config"),
               PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    return env


def wheel_version(wheel: Path) -> str:
    # name-version-python-abi-platform.whl
    return wheel.name.split("-")[1]


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise CheckFailed(f"{' '.join(argv)} exited {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


def install(wheel: Path, venv: Path, env: dict[str, str], cwd: Path) -> Path:
    """A fresh venv with the wheel and its dependencies only; its bin directory."""
    run([sys.executable, "-m", "venv", "--clear", str(venv)], env, cwd)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], env, cwd)
    return venv / "bin"


def frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _reader(stream: IO[bytes], into: queue.Queue[dict[str, Any] | None]) -> None:
    while True:
        length = 0
        while (line := stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if not length:
            into.put(None)
            return
        into.put(json.loads(stream.read(length)))


def _answer(messages: queue.Queue[dict[str, Any] | None], request_id: int) -> dict[str, Any]:
    while True:
        try:
            message = messages.get(timeout=TIMEOUT_S)
        except queue.Empty:
            raise CheckFailed(f"no answer to request {request_id} within {TIMEOUT_S} s") from None
        if message is None:
            raise CheckFailed(f"the server closed stdout before answering request {request_id}")
        if message.get("id") == request_id and "method" not in message:
            return message


def initialize_over_stdio(bin_dir: Path, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """`lsp-agent serve`: initialize, initialized, shutdown, exit. The initialize result."""
    proc = subprocess.Popen([str(bin_dir / "lsp-agent"), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, messages), daemon=True).start()
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": cwd.as_uri(), "capabilities": {},
            "clientInfo": {"name": "wheel_check"},
            "workspaceFolders": [{"uri": cwd.as_uri(), "name": cwd.name}]}}))
        proc.stdin.flush()
        answer = _answer(messages, 1)
        if "result" not in answer:
            raise CheckFailed(f"initialize failed: {answer}")
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.flush()
        shutdown = _answer(messages, 2)
        if "error" in shutdown:
            raise CheckFailed(f"shutdown failed: {shutdown}")
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
        code = proc.wait(timeout=TIMEOUT_S)
        if code != 0:
            raise CheckFailed(f"lsp-agent serve exited {code} after exit")
        result: dict[str, Any] = answer["result"]
        return result
    except CheckFailed as failed:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stderr is not None
        raise CheckFailed(f"{failed}\nits stderr:\n{proc.stderr.read().decode(errors='replace')[-3000:]}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def check(wheel: Path, venv: Path, outside: Path) -> list[str]:
    """Every check in turn; the lines it reports. Raises CheckFailed at the first that fails."""
    env = clean_env(outside)
    cwd = outside / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    bin_dir = install(wheel.resolve(), venv, env, cwd)
    version = wheel_version(wheel)
    said = []

    where = Path(run([str(bin_dir / "python"), "-c", "import lsp_agent; print(lsp_agent.__file__)"],
                     env, cwd).stdout.strip())
    if not where.is_relative_to(venv):
        raise CheckFailed(f"lsp_agent was imported from {where}, not from the venv {venv}")
    said.append(f"imported from {where.parent}")

    printed = run([str(bin_dir / "lsp-agent"), "--version"], env, cwd).stdout.strip()
    if printed != f"lsp-agent {version}":
        raise CheckFailed(f"--version printed {printed!r}, the wheel is {version}")
    said.append(printed)

    demo = run([str(bin_dir / "lsp-agent"), "demo"], env, cwd).stdout
    if "demo outcome: final / verified" not in demo:
        raise CheckFailed(f"the demo did not end final / verified:\n{demo[-2000:]}")
    said.append("demo: final / verified")

    result = initialize_over_stdio(bin_dir, env, cwd)
    info = result.get("serverInfo") or {}
    if info != {"name": "lsp-agent", "version": version} or "capabilities" not in result:
        raise CheckFailed(f"initialize answered {json.dumps(result)[:2000]}")
    said.append(f"initialize over stdio: serverInfo {info['name']} {info['version']}, then shutdown and exit 0")
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description="install the built wheel into a fresh venv and run it")
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--venv", type=Path, help="where to make the venv (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lsp-agent-wheel-") as tmp:
        venv = (args.venv or Path(tmp) / "venv").absolute()
        try:
            for line in check(args.wheel, venv, Path(tmp)):
                print(f"ok: {line}")
        except (CheckFailed, subprocess.TimeoutExpired) as failed:
            print(f"wheel check failed: {failed}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
