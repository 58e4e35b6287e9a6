"""A new user's first minutes in a real VS Code window: the extension just installed, a project with no
lsp-agent configuration. The agent is on the activity bar before any command is run, with one status bar
item; without a model the "Get Started" section says so with a button that opens the exact setting; a
prompt typed before the model is set waits, visibly, and runs once the user sets it in the Settings
editor. Without a working interpreter the button opens `lspAgent.python` on the tab where code-server
(a remote window) keeps it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode, VSCode
from tests.helpers import reply
from tests.providers.loopback import chat_sse

ANSWER = "Hello from the agent: the project has one file."
REPLIES = [reply(text=ANSWER, delay_ms=300)]
PROMPT = "describe this project"
MODEL = "loop/tiny"


class _ChatModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible model on loopback: every chat completion streams ANSWER."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        type(self).requests.append(json.loads(body or b"{}"))
        payload = chat_sse([{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}]},
                            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:  # discovery (/v1/models, /props): nothing to tell
        self.send_error(404)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def chat_model() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(base URL, the chat requests it received)."""
    _ChatModel.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ChatModel)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", _ChatModel.requests
    httpd.shutdown()
    httpd.server_close()


def activity_bar_icon(vs: VSCode) -> Any:
    return vs.page.locator(".part.activitybar .action-item .action-label[aria-label^='LSP Agent']")


def welcome(vs: VSCode, text: str) -> Any:
    """The Get Started section's welcome content with this text."""
    content = vs.page.locator(".part.sidebar .welcome-view-content", has_text=text).first
    content.wait_for(state="visible", timeout=TIMEOUT_MS)
    return content


def setting_row(vs: VSCode, key: str) -> Any:
    """The Settings editor's row of one setting, once it shows (never "No Settings Found")."""
    row = vs.page.locator(f".settings-editor [data-key='{key}']").first
    row.wait_for(state="visible", timeout=TIMEOUT_MS)
    return row


def selected_settings_tab(vs: VSCode) -> str:
    tab = vs.page.locator(".settings-editor .settings-tabs-widget .action-item .action-label.checked").first
    return str(tab.inner_text(timeout=TIMEOUT_MS))


def test_after_install_the_agent_is_on_the_activity_bar_and_a_prompt_waits_for_the_model(
        open_vscode: OpenVSCode, chat_model: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, requests = chat_model
    # the user has a provider (a local OpenAI-compatible server) but has chosen no model yet
    vs = open_vscode("off", REPLIES, files={"README.md": "# demo\n"}, configured=False,
                     settings={"lspAgent.providers": {"loop": {"baseUrl": base_url, "maxRetries": 0}}},
                     ready="Agent: choose a model")

    # no command run: the icon is on the activity bar, and there is one status item
    activity_bar_icon(vs).wait_for(state="visible", timeout=TIMEOUT_MS)
    assert vs.status_items("Agent").count() == 1, [vs.status_items("Agent").all_inner_texts()]
    # the server's CLI text ("pass --model …") is never shown; the client's one message is
    vs.notification("choose a model before the agent can work")
    assert vs.page.locator(".notifications-toasts .notification-toast", has_text="--model").count() == 0

    activity_bar_icon(vs).click()
    content = welcome(vs, "No model is chosen yet")
    assert content.get_by_role("button", name="Choose a Model").is_visible()

    # the prompt typed now waits, visibly, and is not thrown away
    transcript = vs.transcript()
    box = transcript.locator("#input")
    box.wait_for(timeout=TIMEOUT_MS)
    box.click()
    box.fill(PROMPT)
    box.press("Enter")
    waiting = transcript.locator(".entry.prompt.waiting", has_text=PROMPT)
    waiting.wait_for(timeout=TIMEOUT_MS)
    assert "choose a model to send" in str(waiting.inner_text())
    assert box.input_value() == ""
    vs.status("1 waiting")
    vs.doc_screenshot("vscode-welcome")

    # the welcome's button opens the model picker; its last row opens the exact setting, where the user
    # types a model (this loopback server lists none)
    content.get_by_role("button", name="Choose a Model").click()
    vs.page.locator(".quick-input-widget .quick-input-box input").fill("Type a model name")
    vs.pick("Type a model name in Settings")
    row = setting_row(vs, "lspAgent.model")
    field = row.locator("input").first
    field.click()
    field.fill(MODEL)
    field.press("Tab")

    # the waiting prompt runs by itself
    transcript.get_by_text(ANSWER).wait_for(timeout=60_000)
    assert transcript.locator(".entry.prompt.waiting").count() == 0
    assert transcript.locator(".entry.prompt", has_text=PROMPT).count() == 1
    assert len(requests) == 1 and requests[0]["model"] == "tiny"
    assert PROMPT in json.dumps(requests[0]["messages"])
    vs.page.locator(".part.sidebar .welcome-view-content", has_text="No model is chosen yet").wait_for(
        state="hidden", timeout=TIMEOUT_MS)
    vs.status("Agent: not_run", timeout_ms=60_000)
    assert vs.status_items("Agent").count() == 1


def test_without_an_interpreter_the_button_opens_the_python_setting_where_it_lives(open_vscode: OpenVSCode) -> None:
    vs = open_vscode("off", REPLIES, configured=False, settings={"lspAgent.python": "/nonexistent/bin/python3"},
                     ready="Agent: needs setup")
    # a start nobody asked for (no lsp-agent config here): no error toast, the welcome says it
    activity_bar_icon(vs).click()
    content = welcome(vs, "The lsp-agent server is not running")
    content.get_by_role("button", name="Choose the Python Interpreter").click()
    setting_row(vs, "lspAgent.python")
    # code-server is a remote window: the machine-overridable setting is edited on the Remote tab
    assert "Remote" in selected_settings_tab(vs), selected_settings_tab(vs)
    assert vs.page.locator(".settings-editor :text('No Settings Found'):visible").count() == 0
    assert vs.status_items("Agent").count() == 1

    # the guide that ships with the extension opens, offline, in the Markdown preview
    guide = content.get_by_role("button", name="Open the Guide").or_(content.get_by_role("link", name="Open the Guide"))
    guide.first.click()
    vs.page.locator(".tab", has_text="README.md").first.wait_for(timeout=TIMEOUT_MS)
