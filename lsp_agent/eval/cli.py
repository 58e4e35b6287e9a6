"""`lsp-agent eval run MANIFEST`, `eval compare RUNS BASELINE CANDIDATE` and `eval export-inspect RUNS OUT_DIR`.

Records go to stdout (redirect them to a file), progress and problems to stderr.
Exit codes: run — 0 complete, 1 interrupted, aborted or attempts lost (an
`incomplete` line was written), 2 bad manifest or usage, 3 complete but some task invalid,
4 the preflight found an arm's model unreachable (nothing ran);
compare — 0 compared, 1 the records cannot be compared (reasons on stderr),
2 usage; export-inspect — 0 written, 1 the records cannot be exported (reasons on stderr),
2 usage (also: the optional Inspect AI extra is missing, OUT_DIR cannot be written).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from lsp_agent.eval.compare import P95_MIN_VERIFIED
from lsp_agent.eval.metrics import MAX_LINE_BYTES as MAX_EVENT_LINE_BYTES

EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_INVALID_TASKS, EXIT_PREFLIGHT = 0, 1, 2, 3, 4
EXIT_REJECTED = 1


def _jobs(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs takes a whole number, got {raw!r}") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError("--jobs must be between 1 and 256")
    return value


def _bounded(flag: str, low: int, high: int) -> Any:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, got {raw!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{flag} must be between {low:,} and {high:,}")
        return value
    return parse


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `eval run` and `eval compare` on the CLI's subparsers; returns the `eval` parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval", help="paired harness experiments: run a cohort, compare two arms",
        description="Paired harness experiments. See docs/eval.md.")
    sub = parser.add_subparsers(dest="eval_command", required=True)
    run = sub.add_parser("run", help="run every attempt of a manifest; NDJSON records on stdout",
                         description="Run a cohort: one NDJSON line per attempt on stdout, progress on stderr.")
    run.add_argument("manifest", type=Path, help="the manifest (.json or .toml, at most 8 MiB)")
    run.add_argument("--jobs", type=_jobs, default=1,
                     help="attempts in parallel (default 1, so timings stay comparable)")
    run.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="where attempts run: this machine (default) or an existing Ray cluster "
                          "(needs the optional `ray` package)")
    run.add_argument("--model", metavar="PROVIDER/MODEL",
                     help="run the manifest with this model instead of its own `model` (a new cohort)")
    run.add_argument("--resume", type=Path, metavar="RUNS",
                     help="append to RUNS (written by an earlier run of this manifest) only the attempts it lacks "
                          "(missing, cancelled or lost), instead of writing a new cohort to stdout")
    run.add_argument("--skip-preflight", action="store_true",
                     help="start the attempts without first checking that each arm's model is reachable "
                          "(key variable set, endpoint answering, model listed)")
    run.add_argument("--keep", action="store_true",
                     help="keep each attempt's temp dir (fixture, agent stderr, oracle log) for debugging")
    run.add_argument("--max-event-line-bytes", type=_bounded("--max-event-line-bytes", 1024, 1 << 30),
                     default=MAX_EVENT_LINE_BYTES, metavar="N",
                     help="an agent JSON event line longer than N bytes marks the attempt's metrics damaged "
                          f"(`partial`; default {MAX_EVENT_LINE_BYTES:,} = 1 MiB)")
    compare = sub.add_parser("compare", help="paired statistics of two arms from eval run records",
                             description="Compare two arms of one or more complete cohorts.")
    compare.add_argument("runs", type=Path, help="records written by `eval run`")
    compare.add_argument("baseline", help="the baseline arm's name")
    compare.add_argument("candidate", help="the candidate arm's name")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report")
    compare.add_argument("--p95-min-verified", type=_bounded("--p95-min-verified", 1, 1_000_000),
                         default=P95_MIN_VERIFIED, metavar="N",
                         help="verified attempts one task/model/cohort/arm cell needs before its P95 is shown "
                              f"(default {P95_MIN_VERIFIED})")
    compare.add_argument("--simulate-null", type=_bounded("--simulate-null", 1, 100_000), default=0, metavar="N",
                         help="also replay the cohort N times with arm labels swapped at random within pairs "
                              "(identical arms) and report how often a verdict still claims a difference")
    export = sub.add_parser("export-inspect", help="write eval run records as Inspect AI logs (one per arm)",
                            description="Write one Inspect AI log per cohort and arm into OUT_DIR, for Inspect's "
                                        "viewer (`inspect view --log-dir OUT_DIR`). Needs the optional `inspect` "
                                        "extra.")
    export.add_argument("runs", type=Path, help="records written by `eval run`")
    export.add_argument("out_dir", type=Path, help="directory for the logs (created if missing)")
    return parser


def handle_eval(args: argparse.Namespace) -> int:
    if args.eval_command == "run":
        return _run(args)
    if args.eval_command == "export-inspect":
        return _export_inspect(args)
    return _compare(args)


def _fail(message: str) -> None:
    print(f"lsp-agent eval: {message}", file=sys.stderr)


def _claim_stdout() -> Any:
    """The records' own handle on stdout; anything else written to stdout goes to stderr.

    Libraries print to stdout (Ray reports cluster events there), and one stray line in the
    records would make the file unreadable for `compare`.
    """
    sys.stdout.flush()
    records = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return records


def _run(args: argparse.Namespace) -> int:
    from lsp_agent.eval.executor import ExecutorUnavailable, make_executor
    from lsp_agent.eval.manifest import ManifestError, load_manifest
    from lsp_agent.eval.resume import ResumeError, earlier_run

    records = _claim_stdout()
    try:
        manifest = load_manifest(args.manifest, model=args.model)
        earlier = earlier_run(args.resume, manifest.cohort()) if args.resume is not None else None
        executor = make_executor(args.executor)
    except (ManifestError, ExecutorUnavailable, ResumeError) as exc:
        _fail(str(exc))
        return EXIT_USAGE
    if not args.skip_preflight and not _preflight_passes(manifest, args.manifest.resolve().parent):
        return EXIT_PREFLIGHT
    if args.resume is None:
        return asyncio.run(_run_cohort(manifest, args.manifest.resolve().parent, executor, args, records, None))
    try:
        out = args.resume.open("a", encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot append to {args.resume}: {exc.strerror or exc}")
        return EXIT_USAGE
    with out:
        return asyncio.run(_run_cohort(manifest, args.manifest.resolve().parent, executor, args, out, earlier))


def _preflight_passes(manifest: Any, manifest_dir: Path) -> bool:
    """Before any fixture is made: each arm's model can be reached, else every reason and stop."""
    from lsp_agent.eval.preflight import preflight

    checked = asyncio.run(preflight(manifest, manifest_dir))
    for note in checked.notes:
        print(f"eval: preflight: {note}", file=sys.stderr)
    for problem in checked.problems:
        _fail(f"preflight: {problem}")
    if checked.problems:
        _fail("nothing ran; fix the above, or pass --skip-preflight to start anyway")
    return not checked.problems


async def _run_cohort(manifest: Any, base_dir: Path, executor: Any, args: argparse.Namespace, out: Any,
                      earlier: Any) -> int:
    from lsp_agent.eval.progress import Progress
    from lsp_agent.eval.runner import CohortRunner

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    caught = (signal.SIGINT, signal.SIGTERM)
    for sig in caught:
        loop.add_signal_handler(sig, stop.set)
    live = sys.stderr.isatty() and os.environ.get("TERM", "") != "dumb"
    try:
        runner = CohortRunner(manifest, base_dir, out, sys.stderr, executor, jobs=args.jobs, keep=args.keep,
                              earlier=earlier, progress=Progress(sys.stderr, [a.name for a in manifest.arms], live),
                              max_event_line_bytes=args.max_event_line_bytes)
        result = await runner.run(stop)
    finally:
        for sig in caught:
            loop.remove_signal_handler(sig)
    return result.exit_code


def _compare(args: argparse.Namespace) -> int:
    from lsp_agent.eval.compare import CompareError, compare_file
    from lsp_agent.eval.report_html import render_html
    from lsp_agent.eval.report_text import render_table

    if not args.runs.is_file():
        _fail(f"{args.runs} is not a file")
        return EXIT_USAGE
    try:
        summary = compare_file(args.runs, args.baseline, args.candidate, args.p95_min_verified,
                               args.simulate_null)
    except CompareError as exc:
        _fail(str(exc))
        return EXIT_REJECTED
    if args.html is not None:
        try:
            args.html.write_text(render_html(summary), encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot write {args.html}: {exc.strerror or exc}")
            return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        sys.stdout.write(render_table(summary))
    return EXIT_OK


def _export_inspect(args: argparse.Namespace) -> int:
    from lsp_agent.eval.inspect_extra import InspectMissing

    if not args.runs.is_file():
        _fail(f"{args.runs} is not a file")
        return EXIT_USAGE
    try:
        from lsp_agent.eval.inspect_log import ExportError, export_runs
    except InspectMissing as exc:
        _fail(str(exc))
        return EXIT_USAGE
    try:
        written = export_runs(args.runs, args.out_dir)
    except ExportError as exc:
        _fail(str(exc))
        return EXIT_REJECTED
    except OSError as exc:
        _fail(f"cannot write the logs to {args.out_dir}: {exc.strerror or exc}")
        return EXIT_USAGE
    for log in written:
        print(f"{log.path}: cohort {log.cohort[:12]}, arm {log.arm}, {log.samples} attempt(s)")
    return EXIT_OK
