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

    lines += ["", "Success rate over ALL attempts (failures, unverified and timeouts stay in the denominator)"]
    rows = []
    for g in _groups(summary):
        for label, arm in (("baseline", base), ("candidate", cand)):
            s, o = g[label], g[label]["outcomes"]
            rows.append([g["task"] if label == "baseline" else "", arm, percent(s), str(o["completed_unverified"]),
                         str(o["failed"]), str(o["timeout"]), str(o["cancelled"])])
    lines += _table(["task", "arm", "success", "unverified", "failed", "timeout", "cancelled"], rows)

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


def _p95_min(summary: dict[str, Any]) -> int:
    value = summary.get("p95MinVerified", P95_MIN_VERIFIED)
    return value if isinstance(value, int) else P95_MIN_VERIFIED


def _short_reason(reason: str, p95_min_verified: int) -> str:
    if reason.startswith("mixed"):
        return "mixed cells"
    return f"needs {p95_min_verified} verified"
