"""Models and modes in a real VS Code window: the model picker lists what the provider's server offers
at /v1/models, choosing one sets `lspAgent.model` and a typed task runs on it; the mode picker switches to
Plan, which the agent view's header shows."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode
from tests.e2e_vscode.test_first_run import ANSWER, REPLIES, _ChatModel

SERVED = {"object": "list", "data": [{"id": "tiny"}, {"id": "coder-32b"}]}
CANARY_KEY = "sk-e2e-canary-4b1d9f"


class _ListingModel(_ChatModel):
    """The first run's loopback model, which also lists its models (and notes the keys it was sent)."""

    keys: list[str] = []

    def do_GET(self) -> None:
        type(self).keys.append(self.headers.get("Authorization") or "")
        if not self.path.endswith("/models"):
            self.send_error(404)
            return
        payload = json.dumps(SERVED).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def listing_model() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    _ListingModel.requests = []
    _ListingModel.keys = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ListingModel)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", _ListingModel.requests
    httpd.shutdown()
    httpd.server_close()


def test_pick_a_served_model_then_switch_to_plan_mode(open_vscode: OpenVSCode,
                                                      listing_model: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, requests = listing_model
    vs = open_vscode("off", REPLIES, files={"README.md": "# demo\n"}, configured=False,
                     settings={"lspAgent.providers": {"loop": {"baseUrl": base_url, "maxRetries": 0}}},
                     ready="Agent: choose a model")

    vs.command("Choose a Model")
    rows = vs.page.locator(".quick-input-widget .monaco-list-row")
    rows.filter(has_text="loop/coder-32b").first.wait_for(timeout=TIMEOUT_MS)
    assert rows.filter(has_text="listed by the server").count() >= 2
    vs.doc_screenshot("vscode-model-picker")
    vs.pick("loop/tiny")
    vs.status("Agent: idle", timeout_ms=60_000)  # the model is set: the server is ready for a task

    transcript = vs.show_transcript()
    vs.command("Choose a Mode (Agent, Plan, Ask)")
    vs.pick("Plan")
    # the agent view's header says the mode (Agent, the usual one, says nothing)
    vs.page.locator(".part.sidebar").get_by_text("Plan mode").first.wait_for(timeout=TIMEOUT_MS)
    box = transcript.locator("#input")
    box.wait_for(timeout=TIMEOUT_MS)
    box.fill("describe this project")
    box.press("Enter")
    transcript.get_by_text(ANSWER).wait_for(timeout=60_000)
    assert len(requests) == 1 and requests[0]["model"] == "tiny"
    assert "Mode: Plan" in json.dumps(requests[0])  # the server told the model which mode it works in


def test_a_key_entered_in_the_editor_reaches_the_provider_and_no_file(
        open_vscode: OpenVSCode, listing_model: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, _ = listing_model
    vs = open_vscode("off", REPLIES, files={"README.md": "# demo\n"}, configured=False,
                     settings={"lspAgent.providers": {"loop": {"baseUrl": base_url, "maxRetries": 0}},
                               "lspAgent.model": "loop/tiny"})
    vs.command("Enter a Provider Key")
    vs.pick("loop")
    vs.answer_input(CANARY_KEY)
    vs.notification("loop answers at")  # the connection test that follows a new key
    assert _ListingModel.keys[-1] == f"Bearer {CANARY_KEY}"
    # not in settings.json, the logs, the workspace: anywhere under the window's directories on disk
    root = vs.server.workspace.parent
    leaks = [str(p) for p in root.rglob("*") if p.is_file() and not p.is_symlink()
             and CANARY_KEY.encode() in p.read_bytes()]
    assert leaks == []
