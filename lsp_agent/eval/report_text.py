"""The readable table `eval compare` prints: every number carries what it is over."""

from __future__ import annotations

from typing import Any

from lsp_agent.eval.compare import P95_MIN_VERIFIED
from lsp_agent.eval.metrics import METRIC_NAMES

DASH = "—"


def percent(stats: dict[str, Any]) -> str:
    if stats["successRate"] is None:
        return DASH
    return f"{stats['successRate'] * 100:.1f}% ({stats['verified']}/{stats['attempts']})"


def span(bounds: list[float] | None, points: bool = False) -> str:
    """An interval: percent points for rates and differences, a ratio otherwise."""
    if bounds is None:
        return DASH
    if points:
        return f"[{bounds[0] * 100:+.1f}, {bounds[1] * 100:+.1f}] pts"
    return f"[{bounds[0]:.2f}x, {bounds[1]:.2f}x]"


def rate_span(bounds: list[float] | None) -> str:
    return DASH if bounds is None else f"[{bounds[0] * 100:.1f}%, {bounds[1] * 100:.1f}%]"


def share(item: dict[str, Any]) -> str:
    """A counted rate with its Wilson interval: `2/40 = 5.0% [1.4%, 16.5%]`."""
    if item["rate"] is None:
        return f"{item['count']}/{item['of']}"
    return f"{item['count']}/{item['of']} = {item['rate'] * 100:.1f}% {rate_span(item['interval95'])}"


def estimate(effect: dict[str, Any]) -> str:
    value = effect["estimate"]
    if value is None:
        return DASH
    return f"{value * 100:+.1f} pts" if effect["kind"] == "difference" else f"{value:.2f}x"


def detectable(effect: dict[str, Any]) -> str:
    value = effect["detectable"]
    if value is None:
        return DASH
    return f"±{value * 100:.1f} pts" if effect["kind"] == "difference" else f"{value:.2f}x or {1 / value:.2f}x"


def seconds(ms: float | None) -> str:
    return DASH if ms is None else f"{ms / 1000:.2f} s"


def number(value: float | None) -> str:
    if value is None:
        return DASH
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def ratio(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}x"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(header, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return out


def _groups(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [*summary["tasks"], summary["overall"]]


def provenance_line(facts: dict[str, Any]) -> str:
    commits = ", ".join(c[:12] for c in facts["agentCommits"])
    sampling = "; ".join(f"{arm}: {' | '.join(values)}" for arm, values in facts["sampling"].items())
    return (f"built by lsp-agent {', '.join(facts['agentVersions'])} (commit {commits}) · executor "
            f"{', '.join(facts['executors'])} · hosts {', '.join(facts['hosts'])} · server model "
            f"{', '.join(facts['serverModels'])} · sampling {sampling}")


def render_table(summary: dict[str, Any]) -> str:
    base, cand = summary["baseline"], summary["candidate"]
    lines = [*summary.get("warnings", []), f"lsp-agent eval compare · baseline {base} vs candidate {cand}"]
    for c in summary["cohorts"]:
        lines.append(f"cohort {c['cohort'][:12]} · model {c['model']} · revision {c['runtimeRevision']} · "
                     f"{c['tasks']} task(s) x {c['repetitions']} repetition(s) · timeout {c['timeoutMs']} ms")
    if (facts := summary.get("provenance")) is not None:
        lines.append(provenance_line(facts))
    for bad in summary["invalidTasks"]:
        lines.append(f"excluded, invalid task {bad['task']} (cohort {bad['cohort'][:12]}): {bad['reason']}")

    lines += ["", *claims_table(summary), "", *verdicts_table(summary)]
    if "nullSimulation" in summary:
        lines += ["", *null_simulation_lines(summary["nullSimulation"])]

    lines += ["", "Success rate over ALL attempts (failures, unverified and timeouts stay in the denominator), "
                  "Wilson 95% interval"]
    rows = []
    for g in _groups(summary):
        for label, arm in (("baseline", base), ("candidate", cand)):
            s, o = g[label], g[label]["outcomes"]
            rows.append([g["task"] if label == "baseline" else "", arm, percent(s),
                         rate_span(s.get("successRateInterval95")), str(o["completed_unverified"]),
                         str(o["failed"]), str(o["timeout"]), str(o["cancelled"])])
    lines += _table(["task", "arm", "success", "95% interval", "unverified", "failed", "timeout", "cancelled"],
                    rows)

    lines += ["", "Elapsed time (agent + post-run oracle), VERIFIED attempts only"]
    rows = []
    for g in _groups(summary):
        for label, arm in (("baseline", base), ("candidate", cand)):
            s = g[label]
            p95 = seconds(s["elapsedMsP95VerifiedOnly"]) if s["p95OmittedReason"] is None else \
                f"{DASH} ({_short_reason(s['p95OmittedReason'], _p95_min(summary))})"
            rows.append([g["task"] if label == "baseline" else "", arm, str(s["verified"]),
                         seconds(s["elapsedMsMedianVerifiedOnly"]), p95])
    lines += _table(["task", "arm", "verified", "median (verified only)", "p95 (verified only)"], rows)

    lines += ["", f"Paired ratio {cand}/{base} of elapsed time, pairs where BOTH attempts are verified"]
    rows = []
    for g in _groups(summary):
        p = g["paired"]
        rows.append([g["task"], f"{p['bothVerified']} of {p['pairs']}",
                     ratio(p["elapsedRatioMedian"]) if p["ratioOmittedReason"] is None
                     else f"{DASH} ({p['ratioOmittedReason']})"])
    lines += _table(["task", "pairs used", "median ratio"], rows)

    lines += ["", "Metrics, all tasks: median over attempts with observed metrics "
                  "(missing = partial or unavailable; never counted as 0)"]
    rows = []
    overall = summary["overall"]
    for name in METRIC_NAMES:
        for label, arm in (("baseline", base), ("candidate", cand)):
            m = overall[label]["metrics"][name]
            rows.append([name if label == "baseline" else "", arm, number(m["median"]), str(m["observed"]),
                         str(m["missing"])])
    lines += _table(["metric", "arm", "median", "observed", "missing"], rows)
    lines += ["", f"P95 needs {_p95_min(summary)} verified attempts in one task/model/cohort/arm cell. "
                  "A few repetitions cannot show a speed-up: see docs/eval.md."]
    return "\n".join(lines) + "\n"


def claims_table(summary: dict[str, Any]) -> list[str]:
    """The harness's own end-of-run claim against the oracle, per arm (the report's first table)."""
    lines = ["Harness claim vs oracle (decided = the oracle passed or failed and the harness claimed verified "
             "or failed; Wilson 95% intervals)"]
    rows = []
    for label in ("baseline", "candidate"):
        c = summary["harnessVsOracle"][label]
        rows.append([summary[label], str(c["decided"]), share(c["agreement"]), share(c["falseVerified"]),
                     share(c["falseFailed"]), str(c["harnessNotRun"]), str(c["noClaimRecorded"])])
    lines += _table(["arm", "decided", "agreed", "false verified (of 'verified' claims)",
                     "false failed (of 'failed' claims)", "harness not_run", "no claim recorded"], rows)
    return lines


def verdicts_table(summary: dict[str, Any]) -> list[str]:
    lines = [f"Verdicts, {summary['candidate']} vs {summary['baseline']} over all pairs",
             f"rule: {summary['verdictRule']}"]
    rows = []
    for e in summary["effects"]:
        points = e["kind"] == "difference"
        test = test_cell(e["test"])
        rows.append([f"{e['metric']}{' (primary)' if e['role'] == 'primary' else ''}", str(e["pairsUsed"]),
                     estimate(e), span(e["interval95"], points), detectable(e), test, e["verdict"]])
    lines += _table(["metric", "pairs", "estimate", "95% interval", "detectable at 80% power", "test", "verdict"],
                    rows)
    return lines


def test_cell(test: dict[str, Any] | None) -> str:
    if test is None:
        return ""
    p = test["pValue"]
    shown = "p<0.001" if p < 0.001 else f"p={p:.3f}"
    if "onlyBaseline" in test:
        return f"McNemar {shown} ({test['onlyBaseline']} vs {test['onlyCandidate']} discordant)"
    return f"permutation {shown}"


def null_simulation_lines(sim: dict[str, Any]) -> list[str]:
    rate = sim["falsePositiveRate"]
    shown = DASH if rate is None else f"{rate * 100:.1f}% {rate_span(sim['interval95'])}"
    return [f"Null simulation: arm labels swapped at random within pairs, {sim['cohorts']} replays (seed "
            f"{sim['seed']}): a difference was claimed in {sim['claimedDifference']} = {shown}; "
            f"{'within' if sim['withinAlpha'] else 'ABOVE'} the {sim['alpha'] * 100:g}% the rule promises"]


def _p95_min(summary: dict[str, Any]) -> int:
    value = summary.get("p95MinVerified", P95_MIN_VERIFIED)
    return value if isinstance(value, int) else P95_MIN_VERIFIED


def _short_reason(reason: str, p95_min_verified: int) -> str:
    if reason.startswith("mixed"):
        return "mixed cells"
    return f"needs {p95_min_verified} verified"
