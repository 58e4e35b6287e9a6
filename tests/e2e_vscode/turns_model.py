"""An OpenAI-compatible model on loopback that plays a list of turns (text, a tool call), one per chat
request, then repeats a closing text; it lists two models at /v1/models so the model picker has a
choice. The real-host tests that need a model which calls tools *and* is chosen in the editor use it
(the scripted provider is configured by a workspace file, so it cannot be picked)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.providers.loopback import chat_turn

#: what the provider's server says it serves (the picker lists them as "listed by the server")
SERVED = ["tiny", "coder-32b"]
CLOSING = "Nothing more to do."


@dataclass
class Turn:
    text: str = ""
    #: (tool name, arguments)
    call: tuple[str, dict[str, Any]] | None = None


@dataclass
class TurnsModel:
    base_url: str
    turns: list[Turn]
    #: every chat request's JSON body, in order
    requests: list[dict[str, Any]] = field(default_factory=list)


def _handler(model: TurnsModel) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            with lock:
                index = len(model.requests)
                model.requests.append(json.loads(body or b"{}"))
            turn = model.turns[index] if index < len(model.turns) else Turn(text=CLOSING)
            call = (f"call_{index}", turn.call[0], turn.call[1]) if turn.call else None
            payload = chat_turn(text=turn.text, call=call)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if not self.path.endswith("/models"):
                self.send_error(404)
                return
            payload = json.dumps({"object": "list", "data": [{"id": m} for m in SERVED]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_: Any) -> None:
            pass

    return Handler


def serve_turns(turns: list[Turn]) -> Iterator[TurnsModel]:
    """A generator for a fixture: the model serving `turns` until the test ends."""
    model = TurnsModel(base_url="", turns=turns)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    model.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        httpd.shutdown()
        httpd.server_close()


def user_texts(request: dict[str, Any]) -> list[str]:
    """The user messages of one chat request, as text."""
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in request["messages"] if m["role"] == "user"]
