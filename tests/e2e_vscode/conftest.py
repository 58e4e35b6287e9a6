"""A real VS Code host: code-server (VS Code 1.100) with the packaged extension, driven by the system
chromium through Playwright, against the real lsp-agent server and a scripted model.

What it needs comes from `vscode-client/e2e/install.sh` (code-server cached under ~/.cache/lsp-agent,
chromium from apt, the .vsix built from vscode-client/). Without it the suite skips with that command —
except in CI (`CI` set), where a missing piece is a failure: CI must run these tests.

Each test gets its own code-server (user-data-dir with the test's settings, so `files.autoSave` differs
per test), its own workspace and browser context; the extensions directory and the browser are shared.
On failure a screenshot goes to `.ci-artifacts/e2e_vscode/` and its path into the failure output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsp_agent.providers.scripted import Script, ScriptedReply
from tests.helpers import trust_workspace

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "vscode-client"
VSIX = CLIENT / "lsp-agent.vsix"
ARTIFACTS = REPO / ".ci-artifacts" / "e2e_vscode"
CODE_SERVER_VERSION = os.environ.get("CODE_SERVER_VERSION", "4.100.3")
INSTALL = "bash vscode-client/e2e/install.sh"
PY = sys.executable
#: how long one UI expectation may take (the machine is shared: 2 cores for many processes)
TIMEOUT_MS = 30_000

#: the LSP Agent icon on the activity bar
ACTIVITY_BAR_ICON = ".part.activitybar .action-item .action-label[aria-label^='LSP Agent']"
EXPLORER_ICON = ".part.activitybar .action-item .action-label[aria-label^='Explorer']"

#: the auto-save modes every scenario runs under
AUTOSAVE = ["off", "afterDelay"]


@dataclass(frozen=True)
class Tools:
    code_server: Path
    chromium: Path
    vsix: Path


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the real VS Code host suite: {reason}")
    pytest.skip(reason)


def find_tools() -> Tools | str:
    """The three pieces, or why they are not there."""
    cache = Path(os.environ.get("LSP_AGENT_CACHE") or Path.home() / ".cache" / "lsp-agent")
    code_server = cache / f"code-server-{CODE_SERVER_VERSION}" / "node_modules" / ".bin" / "code-server"
    if not os.access(code_server, os.X_OK):
        return f"code-server {CODE_SERVER_VERSION} is not installed: run `{INSTALL}`"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return f"no chromium on PATH: run `{INSTALL}`"
    if not VSIX.is_file():
        return f"{VSIX.relative_to(REPO)} is missing: run `{INSTALL}`"
    sources = [p for d in ("src", "media") for p in (CLIENT / d).rglob("*") if p.is_file()]
    sources += [CLIENT / "package.json", CLIENT / ".vscodeignore"]
    newest = max(p.stat().st_mtime for p in sources)
    if newest > VSIX.stat().st_mtime:
        return f"{VSIX.relative_to(REPO)} is older than vscode-client/src: run `{INSTALL}` to repackage it"
    return Tools(code_server, Path(chromium), VSIX)


@pytest.fixture(scope="session")
def tools() -> Tools:
    found = find_tools()
    if isinstance(found, str):
        _missing(found)
        raise AssertionError("unreachable")
    return found


@pytest.fixture(scope="session")
def extensions_dir(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The .vsix installed once, the way a user installs it."""
    root = tmp_path_factory.mktemp("vscode-extensions")
    done = subprocess.run(
        [str(tools.code_server), "--extensions-dir", str(root / "ext"), "--user-data-dir", str(root / "user"),
         "--install-extension", str(tools.vsix)],
        capture_output=True, text=True, timeout=180, env=_isolated_env(root), check=False)
    assert done.returncode == 0, f"--install-extension failed:\n{done.stdout}\n{done.stderr}"
    assert any((root / "ext").glob("lsp-agent.lsp-agent-*")), done.stdout
    return root / "ext"


# Module scope: the sync Playwright loop is closed before the asyncio suites of other directories run.
@pytest.fixture(scope="module")
def browser(tools: Tools) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # Playwright's own browser download is not reachable here: the distribution's chromium is.
        browser = pw.chromium.launch(executable_path=str(tools.chromium), headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


def _isolated_env(root: Path) -> dict[str, str]:
    """code-server (and the lsp-agent server it starts) read and write only under `root`."""
    env = dict(os.environ)
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"),
                     ("XDG_STATE_HOME", "state")):
        (root / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(root / sub)
    env.pop("VSCODE_IPC_HOOK_CLI", None)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_script(path: Path, replies: list[ScriptedReply]) -> Path:
    path.write_text(Script(label="e2e", replies=replies).model_dump_json(exclude_defaults=True), encoding="utf-8")
    return path


def workspace_config(root: Path, script: Path, verify_argv: list[str] | None = None,
                     kind: str = "test", parser: str = "generic") -> None:
    """`.lsp-agent/config.toml`: the scripted model (its presence also activates the extension)."""
    lines = ['model = "scripted/e2e"', f"script = {json.dumps(str(script))}"]
    if verify_argv is not None:
        lines += ["", "[[tools.verify]]", f"kind = {json.dumps(kind)}", f"argv = {json.dumps(verify_argv)}",
                  f"parser = {json.dumps(parser)}"]
    (root / ".lsp-agent").mkdir(parents=True, exist_ok=True)
    (root / ".lsp-agent" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    trust_workspace(root)  # its model and script are gated settings: trusted as the test's user would


def user_settings(autosave: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "lspAgent.python": PY,
        "files.autoSave": autosave,
        "files.autoSaveDelay": 300,
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "chat.disableAIFeatures": True,
        "editor.minimap.enabled": False,
        "window.dialogStyle": "custom",
        **(extra or {}),
    }


@dataclass
class CodeServer:
    process: subprocess.Popen[bytes]
    url: str
    log: Path
    workspace: Path


@dataclass
class VSCode:
    """The browser page of one VS Code window, with the few gestures the scenarios use."""

    page: Any
    server: CodeServer

    @property
    def workspace(self) -> Path:
        return self.server.workspace

    # --- gestures ---------------------------------------------------------------------------

    def command(self, title: str) -> None:
        """F1, the command's title, Enter: what a user does in the command palette."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        page = self.page
        box = page.locator(".quick-input-widget .quick-input-box input")
        # A key pressed while a webview is still loading (a view the previous command revealed)
        # reaches neither the webview nor the workbench: like a person, press F1 again when no
        # palette shows; a palette that never opens still fails at the bound.
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while True:
            page.keyboard.press("F1")
            try:
                box.wait_for(state="visible", timeout=5_000)
                box.fill(f">{title}", timeout=5_000)
                break
            except PlaywrightTimeout:
                if time.monotonic() > deadline:
                    raise
        row = page.locator(".quick-input-widget .monaco-list-row", has_text=title).first
        row.wait_for(state="visible", timeout=TIMEOUT_MS)
        # The palette lists the best match first; pick the row with exactly this label.
        exact = page.locator(".quick-input-widget .monaco-list-row").filter(
            has=page.locator(".label-name", has_text=re.compile(rf"^{re.escape(title)}$")))
        (exact.first if exact.count() else row).click()

    def answer_input(self, text: str) -> None:
        """Types into the open input box (showInputBox) and presses Enter."""
        box = self.page.locator(".quick-input-widget .quick-input-box input")
        box.wait_for(state="visible", timeout=TIMEOUT_MS)
        box.fill(text)
        box.press("Enter")

    def pick(self, label: str) -> None:
        """Chooses the row with this text in the open quick pick."""
        row = self.page.locator(".quick-input-widget .monaco-list-row", has_text=label).first
        row.wait_for(state="visible", timeout=TIMEOUT_MS)
        row.click()

    def open_file(self, name: str) -> None:
        self.page.keyboard.press("Control+P")
        box = self.page.locator(".quick-input-widget .quick-input-box input")
        box.wait_for(state="visible", timeout=TIMEOUT_MS)
        box.fill(name)
        self.page.locator(".quick-input-widget .monaco-list-row", has_text=name).first.wait_for(timeout=TIMEOUT_MS)
        box.press("Enter")
        self.page.locator(".tab.active", has_text=name).wait_for(timeout=TIMEOUT_MS)
        self.page.locator(".monaco-editor .view-lines").first.wait_for(timeout=TIMEOUT_MS)

    def editor_text(self) -> str:
        """The active editor's visible text, without the empty last line (Monaco draws spaces as no-break
        spaces)."""
        lines = self.page.locator(".editor-group-container.active .monaco-editor .view-lines .view-line")
        tops = lines.evaluate_all(
            "els => els.map(e => [parseFloat(e.style.top) || 0, e.textContent])")
        return "\n".join(text for _, text in sorted(tops)).replace("\xa0", " ").rstrip("\n")

    def wait_editor_text(self, predicate: Callable[[str], bool], what: str, timeout_s: float = 30) -> str:
        deadline = time.monotonic() + timeout_s
        text = self.editor_text()
        while not predicate(text):
            if time.monotonic() > deadline:
                raise AssertionError(f"editor buffer never showed {what}; it shows:\n{text}")
            self.page.wait_for_timeout(200)
            text = self.editor_text()
        return text

    def tab_dirty(self, name: str) -> bool:
        return bool(self.page.locator(".tab.active.dirty", has_text=name).count())

    def status(self, text: str, timeout_ms: int = TIMEOUT_MS) -> Any:
        """The status bar item with this text, once it shows."""
        item = self.page.locator("#workbench\\.parts\\.statusbar .statusbar-item", has_text=text).first
        item.wait_for(state="visible", timeout=timeout_ms)
        return item

    def status_items(self, text: str) -> Any:
        """Every status bar entry that contains this text."""
        return self.page.locator("#workbench\\.parts\\.statusbar .statusbar-item", has_text=text)

    def status_text(self) -> str:
        item = self.page.locator("#workbench\\.parts\\.statusbar .statusbar-item", has_text="Agent:").first
        return str(item.inner_text()) if item.count() else ""

    def transcript(self) -> Any:
        """The transcript webview's document (VS Code nests it: iframe.webview → #active-frame)."""
        return self.page.frame_locator("iframe.webview.ready").frame_locator("#active-frame")

    def show_transcript(self) -> Any:
        self.command("LSP Agent: Show Transcript")
        frame = self.transcript()
        frame.locator("#transcript").wait_for(timeout=TIMEOUT_MS)
        return frame

    def transcript_text(self) -> str:
        return str(self.transcript().locator("#transcript").inner_text(timeout=TIMEOUT_MS))

    def notification(self, text: str, timeout_ms: int = TIMEOUT_MS) -> Any:
        toast = self.page.locator(".notifications-toasts .notification-toast", has_text=text).first
        toast.wait_for(state="visible", timeout=timeout_ms)
        return toast

    def doc_screenshot(self, name: str) -> None:
        """With LSP_AGENT_DOC_SCREENSHOTS=DIR, the window as docs/vscode.md shows it (DIR/name.png)."""
        target = os.environ.get("LSP_AGENT_DOC_SCREENSHOTS")
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(target) / f"{name}.png"))

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


def _start_code_server(tools: Tools, extensions: Path, root: Path, workspace: Path,
                       settings: dict[str, Any], restricted: bool = False,
                       env: dict[str, str] | None = None) -> CodeServer:
    user = root / "user-data"
    (user / "User").mkdir(parents=True, exist_ok=True)
    (user / "User" / "settings.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    port = _free_port()
    log = root / "code-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(tools.code_server), "--bind-addr", f"127.0.0.1:{port}", "--auth", "none",
             "--disable-telemetry", "--disable-update-check",
             # Restricted Mode needs VS Code's own workspace trust; every other test turns it off.
             *([] if restricted else ["--disable-workspace-trust"]),
             "--disable-getting-started-override", "--user-data-dir", str(user),
             "--extensions-dir", str(extensions), str(workspace)],
            stdout=out, stderr=subprocess.STDOUT, env=env or _isolated_env(root), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            raise AssertionError(f"code-server did not come up:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    return CodeServer(process, url, log, workspace)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """code-server and everything it started (extension host, lsp-agent server): one process group."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, 15)
            process.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, 9)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)


OpenVSCode = Callable[..., VSCode]


@pytest.fixture
def open_vscode(tools: Tools, extensions_dir: Path, browser: Any, tmp_path: Path,
                request: pytest.FixtureRequest) -> Iterator[OpenVSCode]:
    """`open_vscode(autosave, replies, files=…, verify=…, settings=…, prepare=…, restricted=…, configured=…,
    ready=…)`: a window on a fresh workspace (`prepare(workspace)` runs before code-server starts;
    `restricted`: VS Code does not trust the folder; `configured=False`: no `.lsp-agent/config.toml`, as a
    new user's project; the replies' script is then `<root>/script.json`), the extension active (the status
    bar shows `ready`, by default `Agent: idle`)."""
    started: list[tuple[CodeServer, Any, VSCode]] = []

    def open_(autosave: str, replies: list[ScriptedReply], *, files: dict[str, str] | None = None,
              verify: list[str] | None = None, kind: str = "test", parser: str = "generic",
              settings: dict[str, Any] | None = None,
              prepare: Callable[[Path], None] | None = None, restricted: bool = False,
              configured: bool = True, ready: str = "Agent: idle") -> VSCode:
        root = tmp_path / f"host-{len(started)}"
        workspace = root / "workspace"
        workspace.mkdir(parents=True)
        for name, text in (files or {}).items():
            (workspace / name).write_text(text, encoding="utf-8")
        script = write_script(root / "script.json", replies)
        if configured:
            workspace_config(workspace, script, verify, kind, parser)
        if prepare is not None:
            prepare(workspace)
        t0 = time.monotonic()
        if restricted:  # the folder opens untrusted, without VS Code's own question
            settings = {"security.workspace.trust.enabled": True, "security.workspace.trust.startupPrompt": "never",
                        "security.workspace.trust.emptyWindow": False, **(settings or {})}
        server = _start_code_server(tools, extensions_dir, root, workspace, user_settings(autosave, settings),
                                    restricted)
        t1 = time.monotonic()
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        vscode = VSCode(page, server)
        started.append((server, context, vscode))
        page.goto(f"{server.url}/?folder={workspace}", wait_until="domcontentloaded")
        page.locator(".monaco-workbench").wait_for(timeout=60_000)
        if not configured:  # nothing starts the server in a plain folder until the user opens the Agent view
            page.locator(ACTIVITY_BAR_ICON).click(timeout=60_000)
        t2 = time.monotonic()
        vscode.status(ready, timeout_ms=60_000)
        if not configured:  # back to the Explorer, where a new window starts, for the scenario's own gestures
            page.locator(EXPLORER_ICON).click(timeout=TIMEOUT_MS)
        print(f"code-server up {t1 - t0:.1f} s, workbench {t2 - t1:.1f} s, extension active and server ready "
              f"{time.monotonic() - t2:.1f} s")
        return vscode

    request.node.vscode_windows = lambda: [v for _, _, v in started]
    yield open_
    for server, context, _ in started:
        try:
            context.close()
        finally:
            _stop(server.process)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failed test: a screenshot of every window it opened, named in the failure output."""
    outcome = yield
    report = outcome.get_result()
    windows = getattr(item, "vscode_windows", None)
    if report.when != "call" or not report.failed or windows is None:
        return
    name = re.sub(r"[^\w.-]+", "_", item.nodeid.split("::", 1)[-1])
    for n, window in enumerate(windows()):
        try:
            shot = window.screenshot(f"{name}-{n}")
            log = ARTIFACTS / f"{name}-{n}-code-server.log"
            shutil.copyfile(window.server.log, log)
            report.sections.append(("vscode host", f"screenshot: {shot}\ncode-server log: {log}\n"
                                    f"status bar: {window.status_text()!r}"))
        except Exception as exc:  # the page may be gone; the failure itself still reports
            report.sections.append(("vscode host", f"no screenshot: {exc}"))
