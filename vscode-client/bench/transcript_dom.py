"""The webview's side of appending to a long transcript, in Chromium: media/transcript.js draws a
1,000-step page, then one more step arrives as the patches the extension sends (7 events: the step
header, streamed text, the tool row running then done, the step's usage). Measured: the time from
a patch message to the laid-out page, per event, and the page's JS heap and DOM node count.

    cd vscode-client && npm run -s compile-tests && node bench/transcript_append.mjs --dump /tmp/t.json
    python bench/transcript_dom.py /tmp/t.json      # the CI venv has Playwright; chromium from apt
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

MEDIA = Path(__file__).resolve().parent.parent / "media"
ROUNDS = 100

PAGE = """<!DOCTYPE html><html><head><style>{css}</style></head><body>
<main id="transcript" tabindex="0"><div id="entries"></div><div id="approvals"></div><div id="waiting"></div></main>
<footer><div class="bar"><div id="state"></div><button id="stop" hidden>Stop</button></div>
<textarea id="input"></textarea></footer>
<script>
window.acquireVsCodeApi = () => ({{ postMessage() {{}}, getState() {{ return {{}}; }}, setState() {{}} }});
</script>
</body></html>"""

MEASURE = """([html, patches, rounds]) => {
  const send = (data) => window.dispatchEvent(new MessageEvent('message', { data }));
  const common = { approvals: '', waiting: '', status: 'running', running: true, session: 's' };
  let t0 = performance.now();
  send({ type: 'render', html, ...common });
  document.body.offsetHeight;
  const first = performance.now() - t0;
  const times = [];
  for (let r = 0; r < rounds; r += 1) {
    for (const rows of patches) {
      const fresh = rows.map(({ key, html }) => ({
        key: key.replaceAll('1001', `x${r}`),
        html: html.replaceAll('1001', `x${r}`),
      }));
      t0 = performance.now();
      send({ type: 'patch', rows: fresh, ...common });
      document.body.offsetHeight;  // layout included: what the user waits for
      times.push(performance.now() - t0);
    }
  }
  return { first, times, rows: document.querySelectorAll('#entries > [data-key]').length,
           nodes: document.getElementsByTagName('*').length };
}"""


def main() -> None:
    dump = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--enable-precise-memory-info"])
        page = browser.new_page(viewport={"width": 420, "height": 900})
        page.set_content(PAGE.format(css=(MEDIA / "transcript.css").read_text(encoding="utf-8")))
        page.add_script_tag(content=(MEDIA / "transcript.js").read_text(encoding="utf-8"))
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        out = page.evaluate(MEASURE, [dump["html"], dump["patches"], ROUNDS])
        cdp.send("HeapProfiler.collectGarbage")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        browser.close()
    times = sorted(out["times"])
    print(json.dumps({
        "rows": out["rows"],
        "firstRenderMs": round(out["first"], 1),
        "appendOneEventMs": {"median": round(statistics.median(times), 3),
                             "p95": round(times[int(0.95 * len(times))], 3), "max": round(times[-1], 3)},
        "events": len(times),
        "jsHeapMiB": round(metrics["JSHeapUsedSize"] / 2**20, 1),
        "domNodes": out["nodes"],
    }, indent=2))


if __name__ == "__main__":
    main()
