"""A real, local, multi-process Ray cluster for the eval tests: a head and worker nodes on loopback.

Each node is a `ray start --block` in a session of its own, so stopping it kills exactly its
processes (never `ray stop`, which would end every Ray process of this user on the machine).
A worker node may be started inside bubblewrap with some directories hidden, so it does not see
the submitting machine's files: what it needs must be shipped, as on a real cluster.
Small on purpose (one CPU per node, no dashboard, no usage stats): CI has two cores.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsp_agent.eval.proctree import is_alive, kill_tree

RAY = str(Path(sys.executable).with_name("ray"))
#: Loopback, but not 127.0.0.1: Ray rewrites "127.0.0.1"/"localhost" in an address to the machine's
#: outward IP, and every connection of the test cluster must stay on loopback.
HOST = "127.0.0.2"
START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(eq=False)  # nodes are compared by identity
class Node:
    proc: subprocess.Popen[bytes]
    hidden: tuple[Path, ...] = ()

    def stop(self) -> None:
        if self.proc.poll() is None or is_alive(self.proc.pid):
            kill_tree(self.proc.pid, root_alive=self.proc.poll() is None)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


@dataclass
class Cluster:
    base: Path
    address: str = ""
    token: str = field(default_factory=lambda: secrets.token_hex(32))
    nodes: list[Node] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The environment of every node and of an `eval run` that talks to this cluster."""
        tmp = self.base / "tmp"
        tmp.mkdir(exist_ok=True)
        # A token of our own: no other local user can submit work to this cluster, and no
        # ~/.ray/auth_token of theirs changes its mode.
        return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0",
                "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token, "RAY_ADDRESS": self.address,
                "TMPDIR": str(tmp), "RAY_enable_metrics_collection": "0", "PYTHONUNBUFFERED": "1"}

    def _spawn(self, argv: list[str], log: str, hidden: tuple[Path, ...] = ()) -> Node:
        if hidden:
            jail = ["bwrap", "--bind", "/", "/", "--dev-bind", "/dev", "/dev"]
            for path in hidden:
                jail += ["--tmpfs", str(path)]
            argv = [*jail, "--", *argv]
        with (self.base / log).open("wb") as out:
            proc = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        node = Node(proc, hidden)
        self.nodes.append(node)
        return node

    def start_head(self, cpus: int = 1) -> None:
        port = free_port()
        self.address = f"{HOST}:{port}"
        self._spawn([RAY, "start", "--head", "--block", f"--node-ip-address={HOST}", f"--port={port}",
                     f"--num-cpus={cpus}", "--include-dashboard=false", "--disable-usage-stats",
                     f"--temp-dir={self.base / 'ray'}"], "head.log")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex((HOST, port)) == 0:
                    return
            if self.nodes[0].proc.poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError(f"the Ray head did not start: {self.log('head.log')}")

    def add_worker(self, hidden: tuple[Path, ...] = (), cpus: int = 1) -> Node:
        n = len(self.nodes)
        return self._spawn([RAY, "start", "--block", f"--address={self.address}", f"--node-ip-address={HOST}",
                            f"--num-cpus={cpus}", "--disable-usage-stats"], f"worker{n}.log", hidden)

    def wait_for_nodes(self, count: int) -> None:
        """Until `count` nodes are alive (asked through a short-lived driver, as `eval run` will connect)."""
        probe = ("import ray, sys, time\n"
                 "ray.init(address=sys.argv[1], _node_ip_address=sys.argv[1].split(':')[0], logging_level='ERROR')\n"
                 "end = time.monotonic() + float(sys.argv[3])\n"
                 "while len([n for n in ray.nodes() if n['Alive']]) < int(sys.argv[2]):\n"
                 "    if time.monotonic() > end: sys.exit(1)\n"
                 "    time.sleep(0.3)\n")
        done = subprocess.run([sys.executable, "-c", probe, self.address, str(count), str(START_TIMEOUT_S)],
                              env=self.env, capture_output=True, timeout=START_TIMEOUT_S + 30, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{count} Ray nodes did not come up: {done.stderr.decode()[-2000:]}")

    def node_of(self, pid: int) -> Node | None:
        """The node whose `ray start` is an ancestor of pid."""
        starts = {node.proc.pid: node for node in self.nodes}
        seen = 0
        while pid > 1 and seen < 64:
            if pid in starts:
                return starts[pid]
            try:
                raw = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                return None
            pid = int(raw[raw.rfind(")") + 2:].split()[1])
            seen += 1
        return None

    def log(self, name: str) -> str:
        try:
            return (self.base / name).read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
        shutil.rmtree(self.base / "ray", ignore_errors=True)
