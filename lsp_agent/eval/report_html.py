"""`eval compare --html FILE`: one self-contained page (inline CSS and SVG; no scripts, no links).

First the harness-claim-vs-oracle table and the verdicts, then two pictures:
per task, the two arms' success rates as bars (over all attempts) with their
Wilson 95 % intervals as error bars; and per task, each pair's elapsed ratio
candidate/baseline on a log axis with the median marked (only pairs where both
attempts are verified) and, for all tasks, the bootstrap 95 % interval.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from lsp_agent.eval.report_text import (
    DASH,
    detectable,
    estimate,
    null_simulation_lines,
    percent,
    ratio,
    render_table,
    seconds,
    share,
    span,
    test_cell,
)

_BASE_COLOUR, _CAND_COLOUR = "#4c78a8", "#f58518"
_ROW = 28
_LEFT = 170
_WIDTH = 640


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def success_chart(summary: dict[str, Any]) -> str:
    groups = [*summary["tasks"], summary["overall"]]
    plot = _WIDTH - _LEFT - 80
    height = 40 + _ROW * len(groups)
    out = [f'<svg role="img" aria-label="success rate per task" width="{_WIDTH}" height="{height}" '
           f'viewBox="0 0 {_WIDTH} {height}">']
    for tick in (0, 25, 50, 75, 100):
        x = _LEFT + plot * tick / 100
        out.append(f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 16}" stroke="#ddd"/>'
                   f'<text x="{x:.1f}" y="14" font-size="10" text-anchor="middle">{tick}%</text>')
    for i, g in enumerate(groups):
        y = 24 + i * _ROW
        out.append(f'<text x="{_LEFT - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_e(g["task"])}</text>')
        for j, (label, colour) in enumerate((("baseline", _BASE_COLOUR), ("candidate", _CAND_COLOUR))):
            stats = g[label]
            rate = stats["successRate"] or 0.0
            width = plot * rate
            out.append(f'<rect x="{_LEFT}" y="{y + j * 11}" width="{width:.1f}" height="10" fill="{colour}">'
                       f'<title>{_e(summary[label])}: {_e(percent(stats))}</title></rect>'
                       f'<text x="{_label_x(stats, plot):.1f}" y="{y + j * 11 + 9}" font-size="9">'
                       f'{_e(percent(stats))}</text>')
            out.append(_error_bar(stats.get("successRateInterval95"), plot, y + j * 11 + 5))
    out.append("</svg>")
    return "".join(out)


def _label_x(stats: dict[str, Any], plot: float) -> float:
    """Right of the bar and of its error bar, so the label never sits on either."""
    bounds = stats.get("successRateInterval95")
    end = max(stats["successRate"] or 0.0, bounds[1] if bounds else 0.0)
    return _LEFT + plot * end + 4


def _error_bar(bounds: list[float] | None, plot: float, y: float) -> str:
    if bounds is None:
        return ""
    x1, x2 = _LEFT + plot * bounds[0], _LEFT + plot * bounds[1]
    return (f'<g class="error-bar" stroke="#222" stroke-width="1"><title>Wilson 95 % interval '
            f'{bounds[0] * 100:.1f}% to {bounds[1] * 100:.1f}%</title>'
            f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}"/>'
            f'<line x1="{x1:.1f}" y1="{y - 3}" x2="{x1:.1f}" y2="{y + 3}"/>'
            f'<line x1="{x2:.1f}" y1="{y - 3}" x2="{x2:.1f}" y2="{y + 3}"/></g>')


def _elapsed_interval(summary: dict[str, Any]) -> list[float] | None:
    for item in summary.get("effects", []):
        if item["metric"] == "elapsedRatio":
            bounds: list[float] | None = item["interval95"]
            return bounds
    return None


def ratio_chart(summary: dict[str, Any]) -> str:
    groups = [*summary["tasks"], summary["overall"]]
    values = [r for g in groups for r in g["paired"]["ratios"] if r > 0]
    overall_interval = _elapsed_interval(summary)
    values += [v for v in overall_interval or [] if v > 0]
    low = min([0.5, *values])
    high = max([2.0, *values])
    lo, hi = math.log(low), math.log(high)
    plot = _WIDTH - _LEFT - 30
    height = 40 + _ROW * len(groups)

    def x_of(value: float) -> float:
        # a 0 ms candidate cannot sit on a log axis; pin it to the left edge
        return _LEFT + plot * (math.log(max(value, low)) - lo) / (hi - lo)

    out = [f'<svg role="img" aria-label="paired elapsed ratio per task" width="{_WIDTH}" height="{height}" '
           f'viewBox="0 0 {_WIDTH} {height}">']
    for tick in (0.25, 0.5, 1.0, 2.0, 4.0):
        if low <= tick <= high:
            x = x_of(tick)
            colour = "#888" if tick == 1.0 else "#ddd"
            out.append(f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 16}" stroke="{colour}"/>'
                       f'<text x="{x:.1f}" y="14" font-size="10" text-anchor="middle">{tick:g}x</text>')
    for i, g in enumerate(groups):
        y = 24 + i * _ROW + 8
        p = g["paired"]
        out.append(f'<text x="{_LEFT - 8}" y="{y + 4}" font-size="12" text-anchor="end">{_e(g["task"])}</text>')
        if not p["ratios"]:
            out.append(f'<text x="{_LEFT + 4}" y="{y + 4}" font-size="10" fill="#666">'
                       f'{_e(p["ratioOmittedReason"])}</text>')
            continue
        for r in p["ratios"]:
            out.append(f'<circle cx="{x_of(r):.1f}" cy="{y}" r="3" fill="{_CAND_COLOUR}" fill-opacity="0.5"/>')
        if g is summary["overall"] and overall_interval is not None:
            x1, x2 = x_of(overall_interval[0]), x_of(overall_interval[1])
            out.append(f'<g class="error-bar" stroke="#000"><title>bootstrap 95 % interval '
                       f'{_e(ratio(overall_interval[0]))} to {_e(ratio(overall_interval[1]))}</title>'
                       f'<line x1="{x1:.1f}" y1="{y + 10}" x2="{x2:.1f}" y2="{y + 10}"/>'
                       f'<line x1="{x1:.1f}" y1="{y + 7}" x2="{x1:.1f}" y2="{y + 13}"/>'
                       f'<line x1="{x2:.1f}" y1="{y + 7}" x2="{x2:.1f}" y2="{y + 13}"/></g>')
        median = p["elapsedRatioMedian"]
        out.append(f'<line x1="{x_of(median):.1f}" y1="{y - 8}" x2="{x_of(median):.1f}" y2="{y + 8}" '
                   f'stroke="#000" stroke-width="2"><title>median {_e(ratio(median))} over '
                   f'{p["bothVerified"]} of {p["pairs"]} pairs</title></line>')
    out.append("</svg>")
    return "".join(out)


def _rows(summary: dict[str, Any]) -> str:
    cells = []
    for g in [*summary["tasks"], summary["overall"]]:
        p = g["paired"]
        cells.append("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in (
            g["task"], percent(g["baseline"]), percent(g["candidate"]),
            seconds(g["baseline"]["elapsedMsMedianVerifiedOnly"]),
            seconds(g["candidate"]["elapsedMsMedianVerifiedOnly"]),
            ratio(p["elapsedRatioMedian"]) if p["elapsedRatioMedian"] is not None else DASH,
            f'{p["bothVerified"]} of {p["pairs"]}')) + "</tr>")
    return "".join(cells)


def _cells(values: tuple[object, ...], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{_e(v)}</{tag}>" for v in values) + "</tr>"


def claims_table(summary: dict[str, Any]) -> str:
    rows = [_cells(("arm", "decided", "agreed", "false verified (of 'verified' claims)",
                    "false failed (of 'failed' claims)", "harness not_run", "no claim recorded"), "th")]
    for label in ("baseline", "candidate"):
        c = summary["harnessVsOracle"][label]
        rows.append(_cells((summary[label], c["decided"], share(c["agreement"]), share(c["falseVerified"]),
                            share(c["falseFailed"]), c["harnessNotRun"], c["noClaimRecorded"])))
    return '<table class="claims">' + "".join(rows) + "</table>"


def verdicts_table(summary: dict[str, Any]) -> str:
    rows = [_cells(("metric", "pairs", "estimate", "95% interval", "detectable at 80% power", "test",
                    "verdict"), "th")]
    for e in summary["effects"]:
        rows.append(_cells((e["metric"] + (" (primary)" if e["role"] == "primary" else ""), e["pairsUsed"],
                            estimate(e), span(e["interval95"], e["kind"] == "difference"), detectable(e),
                            test_cell(e["test"]), e["verdict"])))
    return '<table class="verdicts">' + "".join(rows) + "</table>"


def _warnings(summary: dict[str, Any]) -> str:
    return "".join(f'<p class="warning"><strong>{_e(line)}</strong></p>\n' for line in summary.get("warnings", []))


def render_html(summary: dict[str, Any]) -> str:
    base, cand = _e(summary["baseline"]), _e(summary["candidate"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>lsp-agent eval: {base} vs {cand}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 60em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
.key span {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }}
pre {{ background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 12px; }}
</style></head><body>
{_warnings(summary)}<h1>Paired comparison: baseline <em>{base}</em>, candidate <em>{cand}</em></h1>
<p class="key"><span style="background:{_BASE_COLOUR}"></span>{base} (baseline)
<span style="background:{_CAND_COLOUR}"></span>{cand} (candidate)</p>
<h2>Harness claim vs oracle</h2>
<p>Attempts where the oracle passed or failed and the harness itself claimed verified or failed at the end of
its run; Wilson 95 % intervals.</p>
{claims_table(summary)}
<h2>Verdicts</h2>
<p>{_e(summary["verdictRule"])}</p>
{verdicts_table(summary)}
{"".join(f"<p>{_e(line)}</p>" for line in null_simulation_lines(summary["nullSimulation"]))
 if "nullSimulation" in summary else ""}
<h2>Success rate per task (over all attempts; error bars: Wilson 95 % interval)</h2>
{success_chart(summary)}
<h2>Elapsed ratio {cand}/{base} per pair (both attempts verified; log scale; bar = median)</h2>
{ratio_chart(summary)}
<h2>Summary</h2>
<table><tr><th>task</th><th>success {base}</th><th>success {cand}</th><th>median elapsed {base}
(verified only)</th><th>median elapsed {cand} (verified only)</th><th>median ratio</th><th>pairs used</th></tr>
{_rows(summary)}</table>
<h2>Full table</h2>
<pre>{_e(render_table(summary))}</pre>
</body></html>
"""
