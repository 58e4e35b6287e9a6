"""Day one without a key: the offline example runs and compares; the preflight stops a cohort whose
model cannot be reached before any fixture is made, saying why."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from evalkit import HERE, PY

from lsp_agent.eval.manifest import Manifest
from lsp_agent.eval.preflight import preflight
from tests.providers.loopback import LoopbackServer, json_reply

EXAMPLES = HERE.parent.parent / "examples" / "eval"
EVAL = [PY, "-m", "lsp_agent", "eval"]


def eval_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVAL, *args], capture_output=True, text=True, timeout=300, check=False, cwd=cwd,
                          env=env)


def test_the_offline_example_runs_without_a_key_and_compare_reports_it(tmp_path: Path) -> None:
    copy = tmp_path / "eval"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("hidden", "tasks"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    run = eval_cli("run", "offline.json", cwd=copy, env=env)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["type"] for r in records] == ["cohort"] + ["attempt"] * 12
    assert "preflight: arm baseline: scripted replies" in run.stderr
    # The license task is the one the baseline's script does not do; each of its failures says why.
    assert run.stderr.count("task license rep") == 4
    assert run.stderr.count("the oracle exited 1: the task is not done") == 2
    (tmp_path / "runs.ndjson").write_text(run.stdout)
    compare = eval_cli("compare", str(tmp_path / "runs.ndjson"), "baseline", "candidate", cwd=tmp_path)
    assert compare.returncode == 0, compare.stderr
    assert "66.7% (4/6)" in compare.stdout and "100.0% (6/6)" in compare.stdout


def probe_manifest(where: Path, model: str, arm_config: dict[str, Any]) -> tuple[Path, Path]:
    """A manifest whose oracle leaves a trace when it runs: nothing may run after a failed preflight."""
    where.mkdir(parents=True, exist_ok=True)
    probe = where / "probe.ndjson"
    data = {"model": model, "runtimeRevision": "t", "repetitions": 1, "timeoutMs": 30_000,
            "arms": [{"name": "a", "config": arm_config}, {"name": "b", "config": arm_config}],
            "tasks": [{"id": "t", "prompt": "p", "files": [{"path": "x.txt", "content": "x"}],
                       "oracle": [PY, str(HERE / "probe_oracle.py"), str(probe), "/nonexistent", "x.txt", "y"]}]}
    path = where / "manifest.json"
    path.write_text(json.dumps(data))
    return path, probe


def test_a_missing_key_stops_the_cohort_before_anything_runs_and_skip_preflight_bypasses(tmp_path: Path) -> None:
    path, probe = probe_manifest(tmp_path / "m", "openai/gpt-4.1-mini", {})
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    run = eval_cli("run", str(path), cwd=tmp_path, env=env)
    assert run.returncode == 4, run.stderr
    assert run.stdout == "" and not probe.exists()
    assert "preflight: arm a: openai/gpt-4.1-mini needs an API key in OPENAI_API_KEY, which is not set" in run.stderr
    assert "--skip-preflight" in run.stderr
    # Bypassed: the attempts run (a scripted arm without its script fails each, saying why).
    path, probe = probe_manifest(tmp_path / "s", "scripted/x", {"script": str(tmp_path / "missing.json")})
    refused = eval_cli("run", str(path), cwd=tmp_path)
    assert refused.returncode == 4 and "a reply script file" in refused.stderr and not probe.exists()
    bypassed = eval_cli("run", str(path), "--skip-preflight", cwd=tmp_path)
    assert bypassed.returncode == 0, bypassed.stderr
    assert probe.exists()
    failed = [line for line in bypassed.stderr.splitlines() if "task t rep 1 arm" in line and ": failed" in line]
    assert len(failed) == 2 and all("the agent exited" in line for line in failed), bypassed.stderr


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _manifest(model: str, base_url: str) -> Manifest:
    provider = {"providers": {"openai-compatible": {"baseUrl": base_url}}}
    return Manifest.model_validate({
        "model": model, "runtimeRevision": "t", "arms": [{"name": "a", "config": provider},
                                                         {"name": "b", "config": provider}],
        "tasks": [{"id": "t", "prompt": "p", "files": [{"path": "x", "content": "x"}], "oracle": ["true"]}]})


async def test_preflight_names_an_unreachable_endpoint_and_an_unknown_model(tmp_path: Path) -> None:
    down = await preflight(_manifest("openai-compatible/m", f"http://127.0.0.1:{_closed_port()}/v1"), tmp_path)
    assert len(down.problems) == 2 and down.problems[0].startswith("arm a: cannot reach http://127.0.0.1:")
    server = LoopbackServer()
    await server.start()
    try:
        server.routes["/v1/models"] = json_reply(200, {"data": [{"id": "served-model"}]})
        unknown = await preflight(_manifest("openai-compatible/other", server.url), tmp_path)
        known = await preflight(_manifest("openai-compatible/served-model", server.url), tmp_path)
        server.routes["/v1/models"] = json_reply(401, {"error": {"message": "bad key"}})
        refused = await preflight(_manifest("openai-compatible/served-model", server.url), tmp_path)
    finally:
        await server.close()
    assert unknown.problems[0] == (f"arm a: {server.url} does not list the model 'other' (it lists served-model)")
    assert known.problems == [] and len(server.probes) == 3  # two arms, one provider: asked once each time
    assert "HTTP 401" in refused.problems[0] and "LSP_AGENT_API_KEY" in refused.problems[0]


async def test_a_manifest_with_its_own_agent_command_is_not_preflighted(tmp_path: Path) -> None:
    data = _manifest("fake/model", "http://127.0.0.1:1/v1").model_dump(mode="json")
    checked = await preflight(Manifest.model_validate({**data, "command": [PY, "agent.py"]}), tmp_path)
    assert checked.problems == [] and "own agent `command`" in checked.notes[0]
