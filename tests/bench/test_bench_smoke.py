"""Every benchmark still runs: each bench script, a few steps, as a real subprocess.

No thresholds: a bench exits 1 when a target is missed, and a CI machine says nothing about
targets. What must hold is that it runs to its table, without a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SMOKES = {
    "loop_overhead": (["-n", "3", "--wire", "chat", "--wire", "responses", "--compaction", "off",
                       "--compaction", "on", "--repeat", "1"], "| wire | N | compaction |"),
    "patch_scaling": (["--lines", "1000", "--repeat", "1"], "| exact | 1,000 |"),
    "startup": (["--repeat", "1", "--installed"], "| installed | lsp-agent --help |"),
    "lsp_latency": (["--steps", "3", "--text-kb", "2", "--idle", "5"], "streaming"),
    "context_growth": (["--steps", "12"], "|"),
    "http_client": (["-n", "5", "--rounds", "1"], "| httpx-anyio |"),
    "document_sync": (["--changes", "50", "--lines", "20,400"], "per-change ratio"),
    "checkpoints": (["--files", "300", "--repeat", "1"], "| 300 |"),
    # against this same checkout reached through a link: the second label's package must be the link's
    "version_flag": (["--runs", "2", "--no-hyperfine"], "| this | "),
}


def test_the_version_bench_times_the_checkout_it_is_given(tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "lsp_agent").mkdir(parents=True)
    for entry in (REPO / "lsp_agent").iterdir():
        if entry.name != "__pycache__":
            (other / "lsp_agent" / entry.name).symlink_to(entry)
    done = subprocess.run([sys.executable, str(REPO / "bench" / "version_flag.py"), "--runs", "2", "--against",
                           str(other)], cwd=REPO, capture_output=True, text=True, timeout=600, env=_env())
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert f"other: lsp_agent from {other / 'lsp_agent'}" in done.stderr, done.stderr
    assert "| other: lsp-agent --version |" in done.stdout and "| other | " in done.stdout


def test_the_document_sync_bench_runs_the_checkout_it_is_given(tmp_path: Path) -> None:
    # Another checkout of this code: its package reached through a link, so the path it is imported
    # from tells it from the lsp_agent the bench itself would import (run from this checkout, whose
    # package a `python -c` there would find first).
    other = tmp_path / "other"
    other.mkdir()
    (other / "lsp_agent").symlink_to(REPO / "lsp_agent")
    done = subprocess.run([sys.executable, str(REPO / "bench" / "document_sync.py"), "--changes", "20", "--lines",
                           "20", "--server", f"named={other}"], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={**_env(), "LSP_AGENT_STATE_DIR": str(tmp_path / "state")})
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert f"server named: lsp_agent from {other / 'lsp_agent'}" in done.stdout, done.stdout
    assert "| named | 20 |" in done.stdout
    refused = subprocess.run([sys.executable, str(REPO / "bench" / "document_sync.py"), "--server",
                              f"nothing={tmp_path}"], capture_output=True, text=True, timeout=120, env=_env())
    assert refused.returncode == 2 and "no lsp_agent package there" in refused.stderr


@pytest.mark.parametrize("bench", sorted(SMOKES))
def test_the_bench_runs_to_its_table(bench: str, tmp_path: Path) -> None:
    args, marker = SMOKES[bench]
    done = subprocess.run([sys.executable, str(REPO / "bench" / f"{bench}.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={**_env(), "LSP_AGENT_STATE_DIR": str(tmp_path / "state")})
    assert done.returncode in (0, 1), f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert marker in done.stdout, done.stdout


def test_the_loop_bench_breaks_long_runs_into_100_step_buckets() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import loop_overhead
    finally:
        sys.path.remove(str(REPO / "bench"))
    # 250 steps, a gap of `step / 100` ms: three buckets (1-100, 101-200, 201-250) and a slope of
    # 1 ms per 100 steps over the two full ones.
    sample = loop_overhead.Sample(
        wall_s=1.0, startup_ms=1.0, gaps_ms=[(s, s / 100) for s in range(1, 251)], compactions=0, cpu_s=1.0,
        rss_mb=1.0, step_cpu_ms=1.0, first_bytes=1, last_bytes=1, prefix_stable=1.0, byte_prefix_min=1.0, stop="final",
        floor_gaps_ms=[0.2, 0.4, 0.9])
    result = loop_overhead.Result.of("chat", 250, "off", [sample])
    assert result.floor_ms == pytest.approx(0.4)  # the replay's median gap
    assert len(result.buckets) == 3
    assert result.buckets[0] == pytest.approx(0.505) and result.buckets[2] == pytest.approx(2.255)
    assert result.growth_ms == pytest.approx(1.0)
    assert "growth" in result.misses()  # over the 0.3 ms per 100 steps target
    # CPU by a moment: the last /proc sample not after it
    watched = loop_overhead.Watched(cpu=[(1.0, 0.5), (2.0, 0.75)])
    assert (watched.cpu_at(0.5), watched.cpu_at(1.5), watched.cpu_at(2.0), watched.cpu_at(9.0)) == (0, 0.5, 0.75, 0.75)


def test_the_loop_bench_pairs_runs_with_another_checkout(tmp_path: Path) -> None:
    """--against: each run paired with the same run of another checkout's agent, both shown side by
    side. The other checkout here is a stand-in package that counts its imports and then runs this
    one's agent; a directory that is no checkout is refused before anything runs."""
    other = tmp_path / "other"
    (other / "lsp_agent").mkdir(parents=True)
    marks = tmp_path / "imports"
    (other / "lsp_agent" / "__init__.py").write_text(
        "import os\n"
        f"__path__.append({str(REPO / 'lsp_agent')!r})  # the modules below are this checkout's\n"
        f"with open({str(marks)!r}, 'a') as f:\n"
        "    f.write(f'{os.getpid()}\\n')\n")
    (other / "lsp_agent" / "__main__.py").write_text((REPO / "lsp_agent" / "__main__.py").read_text())
    args = [sys.executable, str(REPO / "bench" / "loop_overhead.py"), "-n", "3", "--wire", "chat", "--repeat", "2"]
    env = {**_env(), "LSP_AGENT_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run([*args, "--against", str(other)], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode in (0, 1), f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    side = done.stdout.split("side by side with", 1)
    assert len(side) == 2, done.stdout
    row = next(line for line in side[1].splitlines() if line.startswith("| chat | 3 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "2"  # both runs of each side made it into the row
    assert float(cells[4]) > 0 and float(cells[5]) > 0 and float(cells[6]) > 0
    # the check that `python -m lsp_agent` there is that checkout's, then its two runs
    assert len(marks.read_text().split()) == 3
    for wrong, says in ((other.parent, "not a checkout of lsp-agent"), (tmp_path / "missing", "no such directory")):
        refused = subprocess.run([*args, "--against", str(wrong)], cwd=REPO, capture_output=True, text=True,
                                 timeout=60, env=env)
        assert refused.returncode != 0 and says in refused.stderr and "Traceback" not in refused.stderr
        assert "| wire |" not in refused.stdout


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "LSP_AGENT_API_KEY"}
