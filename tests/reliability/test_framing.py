"""A bad frame never silences the server: each one is answered (an error to its id when the id can
be known, `id: null` otherwise) and the next good request is answered too. Against the real server
over stdio, with raw bytes (tests/reliability/framing_client.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.framing_client import SERVER, RawServer, frame, message

LIMIT = 1024 * 1024  # --max-message-bytes of the server under test
STALL = 0.5  # --stall-timeout
#: Examples of the fuzz test; LSP_AGENT_FUZZ_FRAMES=5000 for a soak run.
FUZZ_FRAMES = int(os.environ.get("LSP_AGENT_FUZZ_FRAMES", "200"))


def isolated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A module-scoped server's environment: its own state and config (the per-test fixture that
    sets them has not run yet)."""
    return {**os.environ, "LSP_AGENT_STATE_DIR": str(tmp_path_factory.mktemp("state")),
            "XDG_CONFIG_HOME": str(tmp_path_factory.mktemp("config"))}


class Spares:
    """The two other servers this module needs, started together with the module's server so the
    three import at once: one left uninitialized, one on TCP."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        import socket
        import subprocess

        self.fresh = RawServer(tmp_path_factory.mktemp("ws"), env=isolated(tmp_path_factory))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.tcp = subprocess.Popen([*SERVER, "--tcp", f"127.0.0.1:{self.port}", "--stall-timeout", str(STALL)],
                                    cwd=tmp_path_factory.mktemp("tcp"), env=isolated(tmp_path_factory),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close(self) -> None:
        self.fresh.close()
        self.tcp.kill()
        self.tcp.wait()


@pytest.fixture(scope="module")
def spares(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spares]:
    started = Spares(tmp_path_factory)
    yield started
    started.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, spares: Spares) -> Iterator[RawServer]:
    """One server for the module: each test leaves it after a bad frame, and the next test's
    first good request is one more check that it recovered."""
    raw = RawServer(tmp_path_factory.mktemp("ws"), "--max-message-bytes", str(LIMIT), "--stall-timeout", str(STALL),
                    env=isolated(tmp_path_factory))
    assert "capabilities" in raw.initialize()["result"]
    raw.barrier(timeout=120)  # the runtime is built after the early answer (server/boot.py): ready now
    yield raw
    raw.close()
    assert raw.proc.returncode == 0  # shutdown and exit were still answered and obeyed


@pytest.fixture(autouse=True)
def fresh_inbox(request: pytest.FixtureRequest) -> None:
    """Errors a previous test's frames caused are not this test's."""
    if "server" in request.fixturenames:
        raw: RawServer = request.getfixturevalue("server")
        raw.barrier(timeout=STALL * 4 + 10)
        raw.unclaimed.clear()


def answered(server: RawServer) -> None:
    """The good request after a bad frame: agent/status is answered with a result."""
    answer = server.request("agent/status", {}, timeout=STALL * 4 + 10)
    assert answer.get("result", {}).get("state") == "idle", answer


def clean(error: dict[str, Any]) -> None:
    """Errors say what was wrong, never where in the server's code."""
    text = json.dumps(error)
    assert "Traceback" not in text and "traceback" not in text and ".py" not in text, text


def null_error(server: RawServer, code: int) -> dict[str, Any]:
    reply = server.until(lambda m: "error" in m and m.get("id") is None, timeout=STALL * 4 + 10)
    assert reply["error"]["code"] == code, reply
    clean(reply["error"])
    return reply


def status_body(msg_id: int) -> bytes:
    return message(id=msg_id, method="agent/status", params={})


# --- the frames of the report, one by one ----------------------------------------------------------

BAD_HEADERS: dict[str, Callable[[bytes], bytes]] = {
    "negative length": lambda body: b"Content-Length: -5\r\n\r\n" + body,
    "missing length": lambda body: b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + body,
    "non-numeric length": lambda body: b"Content-Length: ten\r\n\r\n" + body,
    "length shorter than body": lambda body: b"Content-Length: %d\r\n\r\n" % (len(body) - 7) + body,
    "random bytes": lambda body: bytes(range(256)) * 3,
    "garbage header": lambda body: b"X-Nonsense: 1\r\n\r\n" + body,
}


@pytest.mark.parametrize("case", sorted(BAD_HEADERS))
def test_a_bad_header_is_an_error_and_the_next_request_is_answered(server: RawServer, case: str) -> None:
    msg_id = server.new_id()
    server.send(BAD_HEADERS[case](status_body(msg_id)))
    answered(server)
    null_error(server, -32700)
    assert len(server.responses_to(msg_id)) <= 1


TOLERATED = {
    "lowercase name": b"content-length: %d\r\n\r\n",
    "no space after colon": b"Content-Length:%d\r\n\r\n",
    "LF-only endings": b"Content-Length: %d\n\n",
    "with Content-Type": b"CONTENT-LENGTH:   %d\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(TOLERATED))
def test_tolerated_headers_are_read(server: RawServer, case: str) -> None:
    msg_id = server.new_id()
    body = status_body(msg_id)
    server.send(TOLERATED[case] % len(body) + body)
    assert server.response(msg_id)["result"]["state"] == "idle"
    assert len(server.responses_to(msg_id)) == 1


def test_a_length_longer_than_its_body_costs_only_that_frame(server: RawServer) -> None:
    lost = server.new_id()
    body = status_body(lost)
    server.send(b"Content-Length: %d\r\n\r\n" % (len(body) + 25) + body)
    answered(server)  # its header was swallowed by the long frame and is read again
    null_error(server, -32700)


def test_a_stalled_body_times_out(server: RawServer) -> None:
    started = time.monotonic()
    server.send(b"Content-Length: 100\r\n\r\n{\"jsonrpc\"")
    reply = null_error(server, -32700)
    assert "stalled" in reply["error"]["message"]
    assert STALL * 0.8 <= time.monotonic() - started < STALL + 10
    answered(server)


def test_the_length_limit_is_inclusive_and_refused_past_it_without_the_body(server: RawServer) -> None:
    at_limit = server.new_id()
    body = status_body(at_limit)
    server.send(frame(body + b" " * (LIMIT - len(body))))  # whitespace is valid JSON
    assert server.response(at_limit)["result"]["state"] == "idle"
    # One past: refused from the header alone (the body is never sent).
    server.send(b"Content-Length: %d\r\n\r\n" % (LIMIT + 1))
    reply = null_error(server, -32700)
    assert f"exceeds the limit of {LIMIT}" in reply["error"]["message"]
    answered(server)
    # A huge declared length with its body streaming in: scanned past, not buffered.
    server.send(b"Content-Length: %d\r\n\r\n" % (50 * LIMIT) + b"[" + b"0," * LIMIT + b"0]")
    null_error(server, -32700)
    answered(server)


ENVELOPES: dict[str, tuple[Callable[[int], bytes], bool]] = {
    # name: (body for a fresh id, whether the error goes to that id)
    "missing jsonrpc": (lambda i: json.dumps({"id": i, "method": "agent/status"}).encode(), True),
    "wrong jsonrpc": (lambda i: json.dumps({"jsonrpc": "1.0", "id": i, "method": "agent/status"}).encode(), True),
    "missing method": (lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "params": {}}).encode(), True),
    "numeric method": (lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": 123}).encode(), True),
    "null id": (lambda i: json.dumps({"jsonrpc": "2.0", "id": None, "method": "agent/status"}).encode(), False),
    "object id": (lambda i: json.dumps({"jsonrpc": "2.0", "id": {"n": i}, "method": "agent/status"}).encode(), False),
    "id beyond int32": (lambda i: json.dumps({"jsonrpc": "2.0", "id": 2**31, "method": "agent/status"}).encode(),
                        False),
    "bare numeric method": (lambda i: json.dumps({"method": 123}).encode(), False),
    "not an object": (lambda i: b'"agent/status"', False),
}


@pytest.mark.parametrize("case", sorted(ENVELOPES))
def test_a_bad_envelope_gets_exactly_one_error_response(server: RawServer, case: str) -> None:
    build, to_id = ENVELOPES[case]
    msg_id = server.new_id()
    server.send(frame(build(msg_id)))
    if to_id:
        reply = server.response(msg_id)
        assert reply["error"]["code"] == -32600, reply
        clean(reply["error"])
    else:
        null_error(server, -32600)
    answered(server)
    assert len(server.responses_to(msg_id)) == (1 if to_id else 0)


def test_a_batch_gets_one_error_per_request(server: RawServer) -> None:
    first, second = server.new_id(), server.new_id()
    batch = [{"jsonrpc": "2.0", "id": first, "method": "agent/status"},
             {"jsonrpc": "2.0", "method": "initialized", "params": {}},
             {"jsonrpc": "2.0", "id": second, "method": "agent/sessions"}]
    server.send(frame(json.dumps(batch)))
    for msg_id in (first, second):
        reply = server.response(msg_id)
        assert reply["error"]["code"] == -32600 and "batch" in reply["error"]["message"]
    answered(server)
    assert [len(server.responses_to(i)) for i in (first, second)] == [1, 1]


def test_a_standard_request_with_bad_params_is_answered(server: RawServer) -> None:
    msg_id = server.new_id()
    server.send(frame(message(id=msg_id, method="textDocument/codeAction", params={"textDocument": 5})))
    reply = server.response(msg_id)
    assert reply["error"]["code"] == -32602, reply
    clean(reply["error"])
    answered(server)


def test_initialize_with_bad_params_is_answered(spares: Spares) -> None:
    raw = spares.fresh  # not initialized yet
    msg_id = raw.new_id()
    raw.send(frame(message(id=msg_id, method="initialize", params={"processId": "x", "capabilities": {}})))
    reply = raw.response(msg_id)
    assert reply["error"]["code"] == -32602 and "processId" in reply["error"]["message"], reply
    clean(reply["error"])
    assert "capabilities" in raw.initialize()["result"]  # the bad one changed nothing


# --- the fuzz --------------------------------------------------------------------------------------


#: Drawn frames carry this id; each run replaces it with a fresh one of the same width, so the
#: declared lengths stay what was drawn.
PLACEHOLDER = 987654321


@st.composite
def bad_frames(draw: st.DrawFn) -> tuple[bytes, bool]:
    """(bytes, whether the placeholder id must get exactly one response)."""
    msg_id = PLACEHOLDER
    body = status_body(msg_id)
    family = draw(st.sampled_from(["random", "header", "length", "envelope", "batch"]))
    if family == "random":
        return draw(st.binary(min_size=1, max_size=300)), False
    if family == "header":
        name = draw(st.sampled_from([b"Content-Length", b"content-length", b"CONTENT-LENGTH", b"Content-length"]))
        space = draw(st.sampled_from([b"", b" ", b"  ", b"\t"]))
        end = draw(st.sampled_from([b"\r\n", b"\n"]))
        extra = draw(st.sampled_from([b"", b"Content-Type: application/vscode-jsonrpc; charset=utf-8" + end]))
        return name + b":" + space + str(len(body)).encode() + end + extra + end + body, True
    if family == "length":
        delta = draw(st.integers(-len(body), 40).filter(lambda d: d != 0))
        value = draw(st.sampled_from([str(len(body) + delta).encode(), b"-1", b"", b"1e3", b"0x10", b"\xff"]))
        return b"Content-Length: " + value + b"\r\n\r\n" + body, False
    if family == "envelope":
        json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                                   | st.text(max_size=10), lambda inner: st.lists(inner, max_size=3)
                                   | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=5)
        envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": "agent/status"}
        for key in ("jsonrpc", "method"):
            choice = draw(st.sampled_from(["keep", "drop", "replace"]))
            if choice == "drop":
                del envelope[key]
            elif choice == "replace":
                envelope[key] = draw(json_values.filter(lambda v: v not in ("exit", "shutdown", "initialize")))
        if draw(st.booleans()):
            envelope["params"] = draw(json_values)
        good_id = True
        if draw(st.integers(0, 4)) == 0:
            envelope["id"] = draw(json_values)
            good_id = False
        return frame(json.dumps(envelope)), good_id and "method" in envelope
    items = draw(st.lists(st.sampled_from([{"jsonrpc": "2.0", "id": msg_id, "method": "agent/status"}, 1, None,
                                           {"jsonrpc": "2.0", "method": "initialized"}]), max_size=4,
                           unique_by=json.dumps))  # one request per id, as the spec asks
    return frame(json.dumps(items)), any(isinstance(i, dict) and "id" in i for i in items)


def test_fuzzed_frames_never_silence_the_server(server: RawServer) -> None:
    tried: list[int] = []
    must_answer: list[int] = []

    @settings(max_examples=FUZZ_FRAMES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(bad_frames())
    def one(case: tuple[bytes, bool]) -> None:
        drawn, must = case
        msg_id = 100_000_000 + server.new_id()  # nine digits, like the placeholder
        server.send(drawn.replace(str(PLACEHOLDER).encode(), str(msg_id).encode()))
        answered(server)
        tried.append(msg_id)
        if must:
            must_answer.append(msg_id)

    one()
    server.drain()
    counts: dict[Any, int] = {}
    for reply in server.received:
        if "method" not in reply and reply.get("id") is not None:
            counts[reply["id"]] = counts.get(reply["id"], 0) + 1
        if "error" in reply:
            clean(reply["error"])
    # Ids the fuzz drew itself (`"id": 0`, reused across examples) are the client's own doing;
    # every id this test allocated is answered at most once, and exactly once when it must be.
    assert all(counts.get(i, 0) <= 1 for i in tried), {i: counts[i] for i in tried if counts.get(i, 0) > 1}
    assert all(counts.get(i) == 1 for i in must_answer)
    assert server.proc.poll() is None
    print(f"\nframing fuzz: {len(tried)} bad frames, {len(must_answer)} with an id answered exactly once, "
          f"{len(server.received)} messages received")


def test_the_tcp_transport_resyncs_too(spares: Spares) -> None:
    """`serve --tcp` (for debugging) reads through the same framing layer."""
    import socket

    deadline = time.monotonic() + 60
    while True:
        try:
            conn = socket.create_connection(("127.0.0.1", spares.port), timeout=20)
            break
        except OSError:
            assert spares.tcp.poll() is None and time.monotonic() < deadline, "the TCP server did not start"
            time.sleep(0.1)
    with conn:
        conn.sendall(b"content-length: nope\r\n\r\n{}" + frame(status_body(7)))
        data = b""
        while b'"id": 7' not in data and b'"id":7' not in data:
            chunk = conn.recv(65536)
            assert chunk, data
            data += chunk
        assert b"-32700" in data  # the bad frame's error came first, then the answer to 7
