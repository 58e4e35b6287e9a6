"""`eval run --executor ray` on a real local cluster: a head plus a worker node in separate processes.

The worker node runs inside bubblewrap with the submitting machine's directory (manifest, oracles,
agent scripts) hidden, so an attempt that ran there proves that everything it needed was shipped.
The cluster is started once for the module and always stopped (its process sessions killed).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evalkit import HERE, PY
from raycluster import Cluster

import lsp_agent
from lsp_agent.eval.proctree import is_alive

if os.environ.get("CI") != "true":  # CI installs both: there a missing one must fail, not skip
    pytest.importorskip("ray", reason="the optional `ray` extra is not installed")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is needed to hide the submitter's files from the worker node",
                    allow_module_level=True)

EVAL = [PY, "-m", "lsp_agent", "eval"]
#: Facts of one run that differ between two runs of the same attempts by design.
TIMING = ("elapsedMs", "verificationMs", "startedAt", "executor")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """(cluster, submitter): `submitter` is a directory the worker node cannot see."""
    submitter = tmp_path_factory.mktemp("submitter")
    (submitter / "MARKER").write_text("only the submitting machine sees this\n")
    # A short base: Ray's unix sockets live under it and their paths are limited to 107 bytes.
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="lsp-ray-")))
    try:
        cluster.start_head()
        cluster.add_worker(hidden=(submitter,))
        cluster.wait_for_nodes(2)
        yield cluster, submitter
    finally:
        cluster.stop()
        shutil.rmtree(cluster.base, ignore_errors=True)


def eval_run(manifest: Path, *args: str, env: dict[str, str] | None = None,
             timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVAL, "run", str(manifest), *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env=env, cwd=manifest.parent)


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def without_timings(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in TIMING}


def scripted_manifest(where: Path, probe_log: Path, marker: Path) -> Path:
    """One task x 2 repetitions, the real agent with scripted arms: baseline solves it, candidate does not."""
    where.mkdir()
    shutil.copy(HERE / "probe_oracle.py", where / "probe_oracle.py")
    for name, creates in (("a.json", (("answer_one.txt", "1"), ("answer_two.txt", "2"))),
                          ("b.json", (("answer_one.txt", "1"),))):
        calls = [{"name": "write_file", "arguments": {"path": p, "content": c}} for p, c in creates]
        (where / name).write_text(json.dumps({"label": "eval", "replies": [
            {"tool_calls": calls, "usage": {"input": 100, "output": 10}},
            {"text": "done", "usage": {"input": 150, "output": 5}}]}))
    tasks = [{"id": f"task_{name}", "prompt": f"Write {value} into answer_{name}.txt.",
              "files": [{"path": "README.md", "content": f"task {name}\n"}],
              "oracle": [PY, "probe_oracle.py", str(probe_log), str(marker), f"answer_{name}.txt", value]}
             for name, value in (("two", "2"),)]
    data = {"model": "scripted/eval", "runtimeRevision": "ray test", "repetitions": 2, "timeoutMs": 60_000,
            "arms": [{"name": "baseline", "config": {"script": "{manifestDir}/a.json"}},
                     {"name": "candidate", "features": {"tail_reminders": True},
                      "config": {"script": "{manifestDir}/b.json"}}],
            "tasks": tasks}  # no `command`: each worker runs its own installed lsp-agent
    path = where / "manifest.json"
    path.write_text(json.dumps(data))
    return path


def test_ray_records_equal_the_local_ones_and_nothing_needs_shared_paths(
        cluster: tuple[Cluster, Path], tmp_path: Path) -> None:
    ray_cluster, submitter = cluster
    probe_local, probe_ray = tmp_path / "local.probe", tmp_path / "ray.probe"
    local_manifest = scripted_manifest(submitter / "local", probe_local, submitter / "MARKER")
    ray_manifest = scripted_manifest(submitter / "ray", probe_ray, submitter / "MARKER")
    # Same content, same cohort: the two runs are of one experiment.
    assert json.loads(local_manifest.read_text())["arms"] == json.loads(ray_manifest.read_text())["arms"]

    local = eval_run(local_manifest, "--jobs", "2")
    assert local.returncode == 0, local.stderr
    remote = eval_run(ray_manifest, "--executor", "ray", "--jobs", "2", env=ray_cluster.env)
    assert remote.returncode == 0, remote.stderr + ray_cluster.log("head.log")
    assert "executor ray" in remote.stderr

    local_lines, ray_lines = lines_of(local.stdout), lines_of(remote.stdout)
    assert [line["type"] for line in ray_lines] == ["cohort"] + ["attempt"] * 4
    for field in ("model", "runtimeRevision", "arms", "tasks", "repetitions", "attempts"):
        assert ray_lines[0][field] == local_lines[0][field]

    def keyed(lines: list[dict[str, Any]]) -> dict[tuple[str, int, str], dict[str, Any]]:
        return {(r["task"], r["repetition"], r["arm"]): without_timings({**r, "cohort": "-"})
                for r in lines if r["type"] == "attempt"}

    assert keyed(ray_lines) == keyed(local_lines)  # outcomes, pairing, arm order (position), metrics, build
    assert {r["executor"] for r in ray_lines[1:]} == {"ray"} and {r["executor"] for r in local_lines[1:]} == {"local"}
    outcomes = {k: r["outcome"] for k, r in keyed(ray_lines).items()}
    assert outcomes == {("task_two", 1, "baseline"): "verified", ("task_two", 1, "candidate"): "failed",
                        ("task_two", 2, "baseline"): "verified", ("task_two", 2, "candidate"): "failed"}
    assert {(k, r["position"]) for k, r in keyed(ray_lines).items()} == {
        (("task_two", 1, "baseline"), 0), (("task_two", 1, "candidate"), 1),
        (("task_two", 2, "candidate"), 0), (("task_two", 2, "baseline"), 1)}
    assert all(r["metricsStatus"] == "observed" for r in keyed(ray_lines).values())

    # Where the oracles ran: locally in the manifest's directory; on the cluster in a shipped copy,
    # and at least once on the node that cannot see the submitting machine's files at all.
    local_probes, ray_probes = lines_of(probe_local.read_text()), lines_of(probe_ray.read_text())
    assert {p["cwd"] for p in local_probes} == {str(local_manifest.parent)}
    assert all(p["cwd"] != str(ray_manifest.parent) for p in ray_probes)
    assert any(not p["seesSubmitter"] for p in ray_probes), ray_probes
    assert any(p["seesSubmitter"] for p in ray_probes), "the head node ran no attempt: scheduling not spread"

    runs = tmp_path / "ray.ndjson"
    runs.write_text(remote.stdout)
    compare = subprocess.run([*EVAL, "compare", str(runs), "baseline", "candidate", "--json"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert compare.returncode == 0, compare.stderr
    overall = json.loads(compare.stdout)["overall"]
    assert overall["baseline"]["successRate"] == 1.0 and overall["candidate"]["successRate"] == 0.0


def test_a_worker_of_another_lsp_agent_build_is_refused_before_it_runs_anything(
        cluster: tuple[Cluster, Path], tmp_path: Path) -> None:
    """The driver runs a copy of the package that says it is another version (on PYTHONPATH, in a
    directory the worker node cannot see, so Ray's copy of the driver's sys.path does not reach it);
    the workers run the real one. Nothing may run: no oracle probe, no record, a clear error."""
    ray_cluster, submitter = cluster
    other = submitter / "other-build"
    shutil.copytree(Path(lsp_agent.__file__).parent, other / "lsp_agent",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (other / "lsp_agent" / "_version.py").write_text('__version__ = "9.9.9-other"\n')
    probe = tmp_path / "probe.ndjson"
    path = scripted_manifest(submitter / "other-version", probe, submitter / "MARKER")
    env = {**ray_cluster.env, "PYTHONPATH": str(other)}
    refused = eval_run(path, "--executor", "ray", env=env)
    assert refused.returncode == 1, refused.stderr
    assert "lsp-agent 9.9.9-other (no commit)" in refused.stderr, refused.stderr
    assert f"lsp-agent {lsp_agent.__version__}" in refused.stderr, refused.stderr
    assert not probe.exists()  # not even the oracle's first check ran on a worker
    assert [line["type"] for line in lines_of(refused.stdout)] == ["cohort", "incomplete"]


def fake_manifest(where: Path, plan: dict[str, Any], repetitions: int = 1) -> Path:
    """The fake agent and the test oracle, both shipped with the manifest (named via {manifestDir})."""
    where.mkdir()
    for script in ("fake_agent.py", "oracle.py"):
        shutil.copy(HERE / script, where / script)
    data = {"model": "fake/model", "runtimeRevision": "ray fault test", "repetitions": repetitions,
            "timeoutMs": 90_000, "command": [PY, "{manifestDir}/fake_agent.py"],
            "arms": [{"name": "base"}, {"name": "cand"}],
            "tasks": [{"id": "t", "prompt": json.dumps(plan), "files": [{"path": "target.txt", "content": "todo"}],
                       "oracle": [PY, "oracle.py", "target.txt", "ok"]}]}
    path = where / "manifest.json"
    path.write_text(json.dumps(data))
    return path


def _complete(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except ValueError:  # still being written
        return False
    return True


def wait_for_files(directory: Path, count: int, proc: subprocess.Popen[str], seconds: float = 90) -> list[Path]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = sorted(directory.glob("*.json"))
        if len(found) >= count and all(_complete(f) for f in found):  # each one written out in full
            return found
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    _out, err = proc.communicate(timeout=30) if proc.poll() is None else proc.communicate()
    raise AssertionError(f"{count} attempts did not start: {err}")


def _describe(pid: int) -> str:
    """A surviving process as a failure should show it: its state (T: stopped) and command line."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError as exc:
        return f"gone ({exc.strerror})"
    return f"state {stat[stat.rfind(')') + 2:].split()[0]}: {cmdline[:200]}"


def test_ctrl_c_cancels_remote_attempts_and_kills_their_trees_on_the_workers(
        cluster: tuple[Cluster, Path], tmp_path: Path) -> None:
    ray_cluster, submitter = cluster
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    path = fake_manifest(submitter / "ctrl-c", {"pids_dir": str(pids_dir), "hang": True})
    proc = subprocess.Popen([*EVAL, "run", str(path), "--executor", "ray", "--jobs", "2"], env=ray_cluster.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=path.parent)
    try:
        files = wait_for_files(pids_dir, 2, proc)
        pids = [pid for f in files for pid in json.loads(f.read_text())]
        nodes = {id(ray_cluster.node_of(json.loads(f.read_text())[0])) for f in files}
        assert len(nodes) == 2  # one attempt on each node (one CPU each)
        assert all(is_alive(p) for p in pids)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    deadline = time.monotonic() + 30
    while any(is_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = {p: _describe(p) for p in pids if is_alive(p)}
    assert survivors == {}, err  # agents and their grandchildren, own sessions included
    lines = lines_of(out)
    assert [line["type"] for line in lines] == ["cohort", "incomplete"]
    assert lines[1]["reason"] == "cancelled" and lines[1]["recorded"] == 0
    assert "INCOMPLETE" in err


def test_a_worker_node_killed_mid_attempt_leaves_it_lost_and_resume_completes_the_cohort(
        cluster: tuple[Cluster, Path], tmp_path: Path) -> None:
    """Runs last: it kills the worker node (the cluster is stopped after the module anyway)."""
    ray_cluster, submitter = cluster
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    # On the hidden worker the agent cannot see MARKER and hangs; on the head it fixes the file.
    plan = {"pids_dir": str(pids_dir), "hang_unless_seen": str(submitter / "MARKER"), "write": {"target.txt": "ok"}}
    path = fake_manifest(submitter / "node-kill", plan)
    runs = tmp_path / "runs.ndjson"
    with runs.open("w") as out:
        proc = subprocess.Popen([*EVAL, "run", str(path), "--executor", "ray", "--jobs", "2"], env=ray_cluster.env,
                                stdout=out, stderr=subprocess.PIPE, text=True, cwd=path.parent)
        try:
            files = wait_for_files(pids_dir, 2, proc)
            hung = [json.loads(f.read_text())[0] for f in files]
            doomed = {ray_cluster.node_of(pid) for pid in hung} - {ray_cluster.nodes[0], None}
            assert len(doomed) == 1, "the hanging attempt is not on the worker node"
            node = doomed.pop()
            assert node is not None
            node.stop()  # the whole node: raylet, its workers, the agent's tree
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 1, err
    lines = lines_of(runs.read_text())
    assert [line["type"] for line in lines] == ["cohort", "attempt", "incomplete"], err
    assert lines[1]["outcome"] == "verified"  # the head's attempt; the lost one is no failure of its arm
    assert lines[2]["reason"] == "lost" and lines[2]["recorded"] == 1 and "LOST" in err
    lost_arm = ({"base", "cand"} - {lines[1]["arm"]}).pop()

    refused = subprocess.run([*EVAL, "compare", str(runs), "base", "cand"], capture_output=True, text=True,
                             timeout=60, check=False)
    assert refused.returncode == 1 and "incomplete" in refused.stderr

    # Only the head is left: the resumed attempt runs there, sees MARKER and completes.
    resumed = eval_run(path, "--executor", "ray", "--resume", str(runs), env=ray_cluster.env)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == ""  # with --resume the records go to the file
    added = lines_of(runs.read_text())[3:]
    assert [line["type"] for line in added] == ["resume", "attempt"]
    assert added[0]["missing"] == 1 and added[1]["arm"] == lost_arm and added[1]["repetition"] == 1
    assert added[1]["position"] == (0 if lost_arm == "base" else 1)  # its planned place in the pair
    compare = subprocess.run([*EVAL, "compare", str(runs), "base", "cand", "--json"], capture_output=True,
                             text=True, timeout=60, check=False)
    assert compare.returncode == 0, compare.stderr
    assert json.loads(compare.stdout)["overall"]["paired"]["pairs"] == 1
