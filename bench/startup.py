"""Start-up: how long the command line takes before it is useful.

- `python -c pass`: the interpreter alone (the floor every command pays);
- `lsp-agent --help`: process start to exit;
- `lsp-agent serve`: process start to the `initialize` response on stdio (server/boot.py answers
  it while the server is still being imported), and to the answer of an `agent/status` sent right
  after `initialized` — when the runtime exists and the server is usable (not a target; then
  `shutdown` and `exit`).

Each is run --repeat times as a real subprocess (`python -m lsp_agent`); the table shows the
median and the minimum (the minimum is what a quiet machine gives; a loaded one inflates the
median). Targets (an editor waits for initialize before anything works): --help <= 60 ms, serve
initialize <= 300 ms (medians).

The package's bytecode is compiled first (`compileall`), as `pip install` does for an installed
package: an editable checkout under PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every
imported module of ours on every start (≈ 5 ms for --help, ≈ 0.2 s CPU for serve), a cost no
installed copy pays. `--no-compile` measures that case.

`--installed` also measures what a user's `pip install` gives: the package built as a wheel and
installed into a new virtual environment (its dependencies reached through a `.pth` file naming
this environment's site-packages), timed through its `lsp-agent` console script. An editable
checkout pays for its import hook at every interpreter start (setuptools' finder imports pathlib,
importlib.util, fnmatch, urllib.parse: ≈ 20 ms on a slow machine), and `python -c pass` pays it too;
an installed copy pays neither. Building the wheel needs the build backend (pip fetches it).

    python bench/startup.py                # 10 runs each
    python bench/startup.py --installed    # and the same from a wheel installed into a new venv
    python bench/startup.py --repeat 1     # the CI smoke
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS_MS = {"lsp-agent --help": 60.0, "lsp-agent serve → initialize": 300.0}


def frame(payload: dict[str, object]) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def read_message(stream: object) -> dict[str, object]:
    assert hasattr(stream, "readline") and hasattr(stream, "read")
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    if not length:
        raise SystemExit("the server closed stdout before answering initialize")
    message: dict[str, object] = json.loads(stream.read(length))
    return message


def timed(command: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - began) * 1000


def time_serve(env: dict[str, str], root: Path, agent: list[str]) -> tuple[float, float]:
    began = time.perf_counter()
    proc = subprocess.Popen([*agent, "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]}}))
        proc.stdin.flush()
        while (message := read_message(proc.stdout)).get("id") != 1:
            pass  # notifications before the response (log messages)
        answered = (time.perf_counter() - began) * 1000
        if "result" not in message:
            raise SystemExit(f"initialize failed: {message}")
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 3, "method": "agent/status", "params": {}}))
        proc.stdin.flush()
        while (message := read_message(proc.stdout)).get("id") != 3:
            pass
        usable = (time.perf_counter() - began) * 1000
        if "result" not in message:
            raise SystemExit(f"agent/status failed: {message}")
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
        proc.wait(timeout=60)  # a loaded machine can take that long
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return answered, usable


def installed_copy(into: Path) -> Path:
    """A venv under `into` with lsp-agent installed from a freshly built wheel; its bin directory."""
    wheels, venv = into / "wheels", into / "venv"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                   check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # From outside the checkout and without PYTHONPATH: `python -m pip` puts its working directory on
    # sys.path, and a checkout's lsp_agent.egg-info (which `pip install -e .` leaves) made pip find
    # lsp-agent "already satisfied" and install nothing, so the venv had no console script.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", *map(str, wheels.glob("lsp_agent-*.whl"))], check=True, cwd=into, env=clean)
    if not (venv / "bin" / "lsp-agent").is_file():
        raise SystemExit(f"the wheel was not installed into {venv}: no bin/lsp-agent")
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # the dependencies: this environment's site-packages as a plain path (its .pth files,
    # among them the editable checkout's finder, are not processed from there)
    (Path(site) / "lsp_agent_bench_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs of each (default 10)")
    parser.add_argument("--no-compile", action="store_true",
                        help="do not compile the package's bytecode first (the editable-checkout case)")
    parser.add_argument("--installed", action="store_true",
                        help="also measure a wheel installed into a new venv (what pip install gives)")
    args = parser.parse_args()
    if not args.no_compile:
        import compileall

        import lsp_agent

        compileall.compile_dir(Path(lsp_agent.__file__).parent, quiet=1)
    print(f"load average {os.getloadavg()[0]:.1f} before", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        env = {**os.environ, "LSP_AGENT_STATE_DIR": str(Path(tmp) / "state"),
               "XDG_CONFIG_HOME": str(Path(tmp) / "config")}
        layouts = {"checkout": ([sys.executable], [sys.executable, "-m", "lsp_agent"])}
        if args.installed:
            bin_dir = installed_copy(Path(tmp))
            layouts["installed"] = ([str(bin_dir / "python")], [str(bin_dir / "lsp-agent")])
        samples: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
        for _ in range(args.repeat):  # interleaved, so load changes hit every row alike
            for layout, (python, agent) in layouts.items():
                samples[layout, "python -c pass"].append(timed([*python, "-c", "pass"], env))
                samples[layout, "lsp-agent --help"].append(timed([*agent, "--help"], env))
                answered, usable = time_serve(env, root, agent)
                samples[layout, "lsp-agent serve → initialize"].append(answered)
                samples[layout, "lsp-agent serve → first agent/status"].append(usable)
    print("| layout | command | median ms | min ms | target |")
    print("|---|---|---:|---:|---|")
    missed = 0
    for (layout, name), values in samples.items():
        median = statistics.median(values)
        target = TARGETS_MS.get(name)
        ok = target is None or median <= target
        missed += not ok
        shown = "" if target is None else f"≤ {target:g} ms {'met' if ok else '✗ missed'}"
        print(f"| {layout} | {name} | {median:.0f} | {min(values):.0f} | {shown} |")
    print(f"load average {os.getloadavg()[0]:.1f} after", file=sys.stderr)
    return 0 if not missed else 1


if __name__ == "__main__":
    raise SystemExit(main())
