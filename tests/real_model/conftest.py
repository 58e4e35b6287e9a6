"""A real model on a real server: llama.cpp's llama-server serving SmolLM2-135M-Instruct.

The artifacts come from `.ci/real_model_setup.sh` (built once, cached under
~/.cache/lsp-agent). Without them the suite skips with the command to run — except
in CI (`CI` set), where their absence is a failure: CI must run these tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"
CONTEXT = 4096
#: llama-server threads. One by default: on a shared or busy machine two threads that wait on each
#: other at every layer were 10x slower (a 745-token request took 114 s with -t 2, 10 s with -t 1,
#: at load 12 on 2 cores); on an idle machine one thread costs little for a 135M model.
THREADS = int(os.environ.get("LSP_AGENT_LLAMA_THREADS") or 1)


@dataclass(frozen=True)
class Artifacts:
    server: Path
    model: Path
    template: Path


def _newest(pattern: str, cache: Path) -> Path | None:
    found = sorted(cache.glob(pattern), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def find_artifacts() -> Artifacts | None:
    cache = Path(os.environ.get("LSP_AGENT_CACHE") or Path.home() / ".cache" / "lsp-agent")
    server = _newest("llama-server-*/bin/llama-server", cache)
    model = _newest("smollm2-*/model.gguf", cache)
    if server is None or model is None or not (server.parent.parent / TEMPLATE).is_file():
        return None
    return Artifacts(server, model, server.parent.parent / TEMPLATE)


@pytest.fixture(scope="session")
def artifacts() -> Artifacts:
    found = find_artifacts()
    if found is None:
        reason = ("llama-server / SmolLM2 not built: run `bash .ci/real_model_setup.sh` "
                  "(builds llama.cpp once, about 8 minutes on 2 cores, cached in ~/.cache/lsp-agent)")
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the real-model suite: {reason}")
        pytest.skip(reason)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """One llama-server process on loopback; `url` ends in /v1."""

    def __init__(self, artifacts: Artifacts, log_dir: Path, context: int = CONTEXT) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_dir / f"llama-server-{self.port}.log"
        argv = [str(artifacts.server), "-m", str(artifacts.model), "--host", "127.0.0.1", "--port", str(self.port),
                "-c", str(context), "-np", "1", "-t", str(THREADS), "--jinja",
                "--chat-template-file", str(artifacts.template),
                "--temp", "0", "--seed", "1", "--no-webui", "--no-warmup"]
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama-server not ready after {timeout_s:g}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._log.close()


@pytest.fixture(scope="session")
def llama(artifacts: Artifacts, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = LlamaServer(artifacts, tmp_path_factory.mktemp("llama"))
    yield server
    server.stop()


@pytest.fixture
def own_llama(artifacts: Artifacts, tmp_path: Path) -> Iterator[LlamaServer]:
    """A server of the test's own (for tests that kill it)."""
    server = LlamaServer(artifacts, tmp_path)
    yield server
    server.stop()


# The e2e editor model (pytest-lsp client, real `lsp-agent serve` over stdio) for test_llama_lsp.
from tests.e2e.conftest import start_editor, workspace  # noqa: E402, F401
