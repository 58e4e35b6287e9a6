"""Reading resumes at the next `Content-Length` header even when it is glued to the bad line before it
or that line ends with a lone CR, and junk before a frame is dropped as it is read, never held.
Against the real server over a pipe, with raw bytes (tests/reliability/framing_client.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.framing_client import RawServer, frame, message

LIMIT = 1024 * 1024  # --max-message-bytes
STALL = 0.5  # --stall-timeout
JUNK_MB = 150
#: RSS the server may gain while 150 MB of junk goes by (it gained 151 MB when it kept it all)
GROWTH_MB = 30


def environment(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "LSP_AGENT_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    root = tmp_path_factory.mktemp("ws")
    raw = RawServer(root, "--max-message-bytes", str(LIMIT), "--stall-timeout", str(STALL),
                    env=environment(tmp_path_factory.mktemp("home")))
    assert "capabilities" in raw.initialize()["result"]
    raw.barrier(timeout=120)
    yield raw
    raw.close()
    assert raw.proc.returncode == 0


def status(msg_id: int) -> bytes:
    return message(id=msg_id, method="agent/status", params={})


def parse_errors(server: RawServer) -> list[dict[str, object]]:
    """The `id: null` parse errors received up to now (a barrier first: everything sent is read)."""
    server.barrier()
    errors = [m for m in server.unclaimed if m.get("id") is None and "error" in m]
    server.unclaimed.clear()
    return errors


GLUED = {
    "non-numeric length glued to the next header": b"Content-Length: abc",
    "non-numeric length ended by a lone CR": b"Content-Length: abc\r",
    "a bad frame with CR-only line endings": b'Content-Length: abc\r\r{"jsonrpc": "2.0"}',
    "a length too long to be a number glued to the next header": b"Content-Length: 99999999999999999999",
    "Content-Type glued to the next header": b"Content-Type: application/vscode-jsonrpc",
}


@pytest.mark.parametrize("case", sorted(GLUED))
def test_the_request_after_a_bad_line_is_answered_and_the_bad_line_reported_once(server: RawServer,
                                                                                 case: str) -> None:
    parse_errors(server)
    msg_id = server.new_id()
    server.send(GLUED[case] + frame(status(msg_id)))
    assert server.response(msg_id, timeout=STALL * 4 + 30)["result"]["state"] == "idle"
    errors = parse_errors(server)
    assert [e["error"]["code"] for e in errors] == [-32700], errors  # type: ignore[index]
    assert len(server.responses_to(msg_id)) == 1


def test_a_request_with_cr_only_line_endings_is_read(server: RawServer) -> None:
    parse_errors(server)
    msg_id = server.new_id()
    body = status(msg_id)
    server.send(b"Content-Length: %d\rContent-Type: application/vscode-jsonrpc; charset=utf-8\r\r" % len(body) + body)
    assert server.response(msg_id, timeout=30)["result"]["state"] == "idle"
    assert parse_errors(server) == []


# --- junk before the first frame -------------------------------------------------------------------


def vm(pid: int, field: str) -> float:
    """VmRSS / VmHWM (the peak) of a process, in MB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status_file:
        line = next(x for x in status_file if x.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def imported(pid: int, within_s: float = 180) -> None:
    """The server imports itself on a second thread while it waits for the first frame: wait until
    that thread is gone, so the import's memory is not counted as the junk's."""
    deadline = time.monotonic() + within_s
    started = False  # the thread is seen, or what it imports (tens of MB) is there
    while not started or len(os.listdir(f"/proc/{pid}/task")) > 1:
        assert time.monotonic() < deadline, "the server did not finish importing"
        started = started or len(os.listdir(f"/proc/{pid}/task")) > 1 or vm(pid, "VmRSS") > 40
        time.sleep(0.05)


JUNK = {
    "blank lines": (b"\r\n", 0),
    "Content-Type lines": (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n", 1),
    "one line without a break": (b"x", 1),  # held its bound before too: a guard
}


@pytest.mark.parametrize("case", sorted(JUNK))
def test_junk_before_the_first_frame_is_not_held(tmp_path: Path, case: str) -> None:
    line, reported = JUNK[case]
    # the default stall timeout (10 s): a loaded machine may pause between two writes of the flood
    server = RawServer(tmp_path, "--max-message-bytes", str(LIMIT), env=environment(tmp_path))
    try:
        imported(server.proc.pid)
        before = vm(server.proc.pid, "VmRSS")
        chunk = line * (2**20 // len(line))  # whole lines: a cut one would be a bad frame of its own
        for _ in range(JUNK_MB * 2**20 // len(chunk)):
            server.send(chunk)  # a pipe: each write waits until the server has read most of the last
        peak = vm(server.proc.pid, "VmHWM")
        answer = server.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
                                timeout=120)
        assert "capabilities" in answer["result"], answer
        server.send(frame(message(method="initialized", params={})))
        errors = parse_errors(server)  # also: agent/status is answered after it
        print(f"\n{case}: server RSS {before:.1f} MB before {JUNK_MB} MB of junk, peak {peak:.1f} MB")
        assert peak - before < GROWTH_MB, (before, peak)
        assert len(errors) == reported, errors  # a skipped span is reported once; blank lines are harmless
    finally:
        server.close()
