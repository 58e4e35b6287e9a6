"""What the cluster path relies on, tested without a cluster: the packed manifest directory,
`{manifestDir}`, `eval run --resume`, and the progress bar."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from evalkit import FAKE, ORACLE, PY, attempts, manifest, run_cohort, task

from lsp_agent.eval.bundle import Bundle, BundleError, pack, unpack
from lsp_agent.eval.progress import Progress
from lsp_agent.eval.records import AttemptRecord, MetricsStatus, Outcome

EVAL = [PY, "-m", "lsp_agent", "eval"]


# --- the packed manifest directory --------------------------------------------------------------


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): (p.read_text() if p.is_file() else "<dir>")
            for p in sorted(root.rglob("*")) if not p.is_symlink()}


def test_pack_ships_the_directory_but_not_caches_or_links_out(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "oracles").mkdir(parents=True)
    (src / "oracles" / "check.py").write_text("print('hi')\n")
    (src / "manifest.json").write_text("{}")
    for skipped in (".git", "__pycache__", "node_modules", ".venv"):
        (src / skipped).mkdir()
        (src / skipped / "big").write_text("x" * 1000)
    (src / "inside").symlink_to("oracles/check.py")
    (src / "outside").symlink_to("/etc/passwd")
    bundle = pack(src)
    assert bundle.files == 3  # check.py, manifest.json, the link inside
    here = unpack(bundle, tmp_path / "cache")
    assert here == tmp_path / "cache" / bundle.digest
    assert tree(here) == {"manifest.json": "{}", "oracles": "<dir>", "oracles/check.py": "print('hi')\n"}
    assert (here / "inside").resolve() == (here / "oracles" / "check.py").resolve()
    assert not (here / "outside").exists() and not (here / "outside").is_symlink()
    # Same content, same digest (no times or owners in it); unpacking again reuses the copy.
    os.utime(src / "manifest.json", (0, 0))
    assert pack(src).digest == bundle.digest
    assert unpack(bundle, tmp_path / "cache") == here


def test_pack_refuses_a_directory_over_the_limits(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(os.urandom(4096))
    assert pack(tmp_path, max_bytes=64 * 1024).files == 1
    with pytest.raises(BundleError, match="packs to more than"):
        pack(tmp_path, max_bytes=1024)
    for n in range(3):
        (tmp_path / f"f{n}").write_text("x")
    assert pack(tmp_path, max_files=4).files == 4  # at the limit
    with pytest.raises(BundleError, match="more than 3 files"):
        pack(tmp_path, max_files=3)


def test_a_damaged_bundle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a").write_text("a")
    good = pack(tmp_path / "src")
    with pytest.raises(BundleError, match="digest mismatch"):
        unpack(Bundle(digest=good.digest, data=good.data[:-3] + b"xyz", files=1), tmp_path / "cache")
    assert not (tmp_path / "cache" / good.digest).exists()


def test_manifest_dir_placeholder_names_shipped_scripts(tmp_path: Path) -> None:
    """Command, oracle and arm config name files relative to the manifest, wherever it is unpacked."""
    (tmp_path / "agent.py").write_text(Path(FAKE).read_text())
    (tmp_path / "oracle.py").write_text(Path(ORACLE).read_text())
    seen = tmp_path / "argv.json"
    data = manifest([task("t", {"write": {"target.txt": "ok"}, "argv_to": str(seen)})],
                    command=[PY, "{manifestDir}/agent.py"],
                    arms=[{"name": "base"}, {"name": "cand", "config": {"script": "{manifestDir}/b.json"}}])
    data["tasks"][0]["oracle"] = [PY, "{manifestDir}/oracle.py", "target.txt", "ok"]
    lines, err, _ = run_cohort(data, base_dir=tmp_path)
    assert [r["outcome"] for r in attempts(lines)] == ["verified", "verified"], err
    argv = json.loads(seen.read_text())["argv"]
    assert f'script="{tmp_path}/b.json"' in argv


# --- eval run --resume ------------------------------------------------------------------------


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_resume_reruns_only_missing_and_cancelled_attempts_into_the_same_file(tmp_path: Path) -> None:
    path = write(tmp_path / "m.json", manifest([task("t", {"write": {"target.txt": "ok"}})], repetitions=2))
    first = subprocess.run([*EVAL, "run", str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0, first.stderr
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    kept, dropped = [], None
    for line in lines:
        if line["type"] == "attempt" and (line["repetition"], line["arm"]) == (2, "cand"):
            dropped = line
            continue
        if line["type"] == "attempt" and (line["repetition"], line["arm"]) == (1, "base"):
            line = {**line, "outcome": "cancelled", "verificationMs": None}
        kept.append(line)
    assert dropped is not None
    kept.append({"type": "incomplete", "cohort": lines[0]["cohort"], "reason": "cancelled", "recorded": 3,
                 "planned": 4})
    runs = tmp_path / "runs.ndjson"
    runs.write_text("".join(json.dumps(line) + "\n" for line in kept) + '{"type": "attem')  # cut mid-write

    resumed = subprocess.run([*EVAL, "run", str(path), "--resume", str(runs)], capture_output=True, text=True,
                             timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "" and "resuming 2 missing attempt(s)" in resumed.stderr
    after = [json.loads(line) for line in runs.read_text().splitlines()]  # the cut line is gone
    added = after[len(kept):]
    assert [a["type"] for a in added] == ["resume", "attempt", "attempt"]
    assert {(a["repetition"], a["arm"], a["position"]) for a in added[1:]} == {(1, "base", 0), (2, "cand", 0)}
    compare = subprocess.run([*EVAL, "compare", str(runs), "base", "cand", "--json"], capture_output=True,
                             text=True, timeout=60, check=False)
    assert compare.returncode == 0, compare.stderr
    summary = json.loads(compare.stdout)
    assert summary["overall"]["paired"]["pairs"] == 2 and summary["overall"]["baseline"]["outcomes"]["cancelled"] == 0

    again = subprocess.run([*EVAL, "run", str(path), "--resume", str(runs)], capture_output=True, text=True,
                           timeout=120, check=False)
    assert again.returncode == 0 and "resuming 0 missing" in again.stderr  # nothing left to do


def test_resume_refuses_another_cohort_or_a_missing_file(tmp_path: Path) -> None:
    path = write(tmp_path / "m.json", manifest([task("t", {})]))
    runs = tmp_path / "runs.ndjson"
    runs.write_text(json.dumps({"type": "cohort", "cohort": "c" * 64, "model": "fake/model", "runtimeRevision": "x",
                                "arms": [], "tasks": [], "repetitions": 1, "timeoutMs": 1000, "attempts": 0}) + "\n")
    before = runs.read_text()
    done = subprocess.run([*EVAL, "run", str(path), "--resume", str(runs)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2 and "no run of this manifest" in done.stderr and runs.read_text() == before
    done = subprocess.run([*EVAL, "run", str(path), "--resume", str(tmp_path / "nope")], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "not a file" in done.stderr


# --- progress ------------------------------------------------------------------------------------


def record(arm: str, outcome: Outcome) -> AttemptRecord:
    return AttemptRecord(cohort="c", model="m/x", task="t", repetition=1, arm=arm, position=0, outcome=outcome,
                         elapsed_ms=1500, metrics_status=MetricsStatus.UNAVAILABLE)


def test_progress_is_a_live_bar_on_a_terminal_and_plain_lines_otherwise() -> None:
    live = io.StringIO()
    bar = Progress(live, ["base", "cand"], live=True)
    bar.begin(4)
    bar.attempt(record("base", Outcome.VERIFIED), None)
    bar.attempt(record("cand", Outcome.FAILED), None)
    bar.say("task x is INVALID")
    bar.end()
    text = live.getvalue()
    assert "\r\x1b[K" in text and "eval: task x is INVALID\n" in text
    assert "[############............] 2/4 · base 1/1 verified · cand 0/1 verified · ETA " in text
    assert text.endswith("\n") and "attempt 1 of 4" not in text

    plain = io.StringIO()
    lines = Progress(plain, ["base", "cand"], live=False)
    lines.begin(4)
    lines.attempt(record("base", Outcome.VERIFIED), "/tmp/kept")
    assert "\x1b" not in plain.getvalue() and "\r" not in plain.getvalue()
    assert "eval: attempt 1 of 4 · task t rep 1 arm base: verified in 1.5s · ETA " in plain.getvalue()
    assert "kept /tmp/kept" in plain.getvalue()
