"""The CLI as a new user meets it: real `lsp-agent` processes, and a loopback HTTP server
for the provider. No model, bad flags, bad settings and an empty prompt get one clear line and no
traceback; human output starts with a header; `--require-verified` fails CI unless a check observed
the result; a 401 names the key variable."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.providers.registry import NO_MODEL
from tests.providers.loopback import LoopbackServer, json_reply, write_workspace


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lsp_agent", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def clean(proc: subprocess.CompletedProcess[str]) -> str:
    """stderr, checked free of Python's and pydantic's internals."""
    assert "Traceback" not in proc.stderr and "pydantic" not in proc.stderr, proc.stderr
    return proc.stderr


def script(path: Path, replies: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"label": "cli", "replies": replies}), encoding="utf-8")
    return path


def test_no_model_configured_says_so_and_how_to_set_one(tmp_path: Path) -> None:
    proc = cli("run", "fix it", "--workspace", str(tmp_path))
    assert proc.returncode == 2
    err = clean(proc)
    assert err.strip() == f"lsp-agent: {NO_MODEL}"
    assert "--model provider/model" in err and ".lsp-agent/config.toml" in err
    assert "scripted" not in err.replace("runs a scripted example", "") and "--script" not in err


def test_an_explicit_scripted_model_without_a_script_still_names_the_script(tmp_path: Path) -> None:
    proc = cli("run", "fix it", "--workspace", str(tmp_path), "--model", "scripted/demo")
    assert proc.returncode == 2 and "--script FILE" in clean(proc)


def test_version() -> None:
    from lsp_agent._version import __version__

    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"lsp-agent {__version__}"


@pytest.mark.parametrize("level", ["bogus", "verbose"])
def test_an_unknown_log_level_is_a_usage_error(level: str) -> None:
    proc = cli("--log-level", level, "demo")
    assert proc.returncode == 2
    assert f"unknown log level '{level}': use one of DEBUG, INFO, WARNING, ERROR, CRITICAL" in clean(proc)


def test_a_log_level_is_case_insensitive() -> None:
    assert cli("--log-level", "info", "demo", "--json").returncode == 0


@pytest.mark.parametrize(("pair", "said"), [
    ("maxSteps=lots", "invalid settings: maxSteps: Input should be a valid integer"),
    ("limits=3", "invalid settings: limits: "),
    ("sandboxMode=open", "invalid settings: sandboxMode: "),
    ("nokey", "--config takes KEY=VALUE, got 'nokey'"),
    ("a..b=1", "the key has an empty part"),
])
def test_bad_config_values_get_one_line_without_traceback_or_urls(tmp_path: Path, pair: str, said: str) -> None:
    proc = cli("run", "x", "--workspace", str(tmp_path), "--config", pair)
    assert proc.returncode == 2
    err = clean(proc)
    assert said in err and "errors.pydantic.dev" not in err and len(err.strip().splitlines()) == 1, err


def test_a_config_key_cannot_be_both_a_value_and_a_table(tmp_path: Path) -> None:
    proc = cli("run", "x", "--workspace", str(tmp_path), "--config", "limits=3", "--config", "limits.read_lines=5")
    assert proc.returncode == 2 and "limits was given a value, it cannot also have keys" in clean(proc)


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_an_empty_prompt_is_refused_before_anything_runs(tmp_path: Path, prompt: str) -> None:
    proc = cli("run", prompt, "--workspace", str(tmp_path), "--model", "scripted/t", "--script",
               str(script(tmp_path / "s.json", [{"text": "hi"}])))
    assert proc.returncode == 2 and "the prompt is empty" in clean(proc)
    assert proc.stdout == ""


def test_demo_scenario_help_explains_each_scenario() -> None:
    out = cli("demo", "--help").stdout
    assert "wrong-write: a wrong edit the checks catch" in " ".join(out.split())
    assert "budget: the step budget runs out" in " ".join(out.split())


def verified_workspace(root: Path) -> None:
    write_workspace(root, {"calc.py": "def add(a, b):\n    return a - b\n",
                           "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"})


def test_require_verified_exits_3_unless_a_check_observed_the_result(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    verified_workspace(ws)
    fix = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
           {"tool_calls": [{"name": "apply_patch", "arguments": {"path": "calc.py", "old_text": "    return a - b\n",
                                                                  "new_text": "    return a + b\n"}}]}]
    unchecked = script(tmp_path / "unchecked.json", [*fix, {"text": "Fixed, trust me."}])
    checked = script(tmp_path / "checked.json", [*fix, {"tool_calls": [{"name": "verify_project"}]},
                                                 {"text": "Fixed and checked."}])
    base = ["run", "fix add", "--workspace", str(ws), "--model", "scripted/t", "--require-verified"]
    proc = cli(*base, "--script", str(unchecked))
    assert proc.returncode == 3, proc.stderr
    assert "--require-verified: the run ended final with verification not_run, not verified" in clean(proc)
    # Without the flag the same run is a success (it ended final).
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    assert cli(*base[:-1], "--script", str(unchecked)).returncode == 0
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    proc = cli(*base, "--script", str(checked))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_human_output_starts_with_model_workspace_and_session(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = cli("run", "say hi", "--workspace", str(ws), "--model", "scripted/t", "--script",
               str(script(tmp_path / "s.json", [{"text": "hi"}])))
    assert proc.returncode == 0, proc.stderr
    first, second, third = proc.stdout.splitlines()[:3]
    assert first.startswith("lsp-agent: scripted/t ")
    assert second == f"workspace: {ws.resolve()}"
    assert third.startswith("session: ses_")
    shown = cli("session", "show", third.removeprefix("session: "), "--workspace", str(ws))
    assert shown.returncode == 0 and "say hi" in shown.stdout, shown.stdout + shown.stderr


async def run_cli(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """The CLI in a subprocess while this event loop serves the loopback server."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "lsp_agent", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                stdin=asyncio.subprocess.DEVNULL, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("key", [None, "sk-wrong"])
@pytest.mark.parametrize(("model", "resolved", "variable"), [
    ("openai-compatible/m", "openai-compatible/m", "LSP_AGENT_API_KEY"),
    ("qwen2.5-coder", "ollama/qwen2.5-coder", "OLLAMA_API_KEY"),  # a bare known name: its usual provider
])
async def test_a_401_names_the_key_variable_and_whether_it_was_set(tmp_path: Path, key: str | None, model: str,
                                                                   resolved: str, variable: str) -> None:
    server = LoopbackServer()
    await server.start()
    provider = resolved.split("/")[0]
    try:
        server.fallback = json_reply(401, {"error": {"message": "Incorrect API key provided"}})
        env = {k: v for k, v in os.environ.items() if k not in ("LSP_AGENT_API_KEY", "OLLAMA_API_KEY")}
        if key:
            env[variable] = key
        code, out, err = await run_cli("run", "hi", "--workspace", str(tmp_path), "--model", model,
                                       "--base-url", server.url, "--config", f"providers.{provider}.discover=false",
                                       env=env)
    finally:
        await server.close()
    assert code == 1
    assert "Traceback" not in err
    assert f"lsp-agent: {resolved} via {server.url}/chat/completions (chat)" in out
    assert "answered HTTP 401: Incorrect API key provided" in out
    if key:
        assert f"the server refused the API key in {variable}: check it" in out
        assert server.requests[0].headers.get("authorization") == "Bearer sk-wrong"
    else:
        assert f"set the environment variable {variable} (it is unset)" in out
        assert "authorization" not in server.requests[0].headers
    assert len(server.requests) == 1  # a 401 is not retried

