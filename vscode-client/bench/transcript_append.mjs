// The extension's side of appending to a long transcript: a 1,000-step run is fed event by event,
// then the time to take one more event (apply it, collect the changed rows, render only those) is
// measured — and, for comparison, the time to render every row again, what the view did before it
// drew incrementally. `--dump FILE` also writes the 1,000-step page and one more step's rows as
// JSON for the webview's side (transcript_dom.py).
//
//   cd vscode-client && npm run -s compile-tests && node bench/transcript_append.mjs [--dump /tmp/t.json]

import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { Transcript } from '../out/src/transcript.js';
import { renderEntries, renderEntry } from '../out/src/transcriptHtml.js';

const STEPS = 1000;
const SAMPLES = 200;
const S = 'ses_bench';
const G = 'gen_bench';
const TOKENS = { input: 2000, output: 40, reasoning: 0, unknown: false, cache: { read: 0, write: 0 } };
const OUTPUT = Array.from({ length: 40 }, (_, i) => `line ${i + 1}: some tool output with words in it`).join('\n');

function stepEvents(step) {
  const b = { sessionID: S, generation: G };
  const call = `call_${step}`;
  const tool = step % 3 === 0 ? 'apply_patch' : step % 3 === 1 ? 'run_command' : 'read_file';
  const input =
    tool === 'apply_patch'
      ? { path: `src/m${step}.py`, old_text: 'x = 1\ny = 2\n', new_text: 'x = 1\ny = 3\nz = 4\n' }
      : tool === 'run_command'
        ? { command: `pytest -q tests/test_${step}.py` }
        : { path: `src/m${step}.py` };
  const part = (state) => ({ id: `prt_${step}`, messageID: `msg_${step}`, callID: call, tool, state });
  return [
    { ...b, type: 'step_start', step, maxSteps: STEPS + 10 },
    { ...b, type: 'text_delta', partID: `txt_${step}`, delta: `Step ${step}: ` },
    { ...b, type: 'text_delta', partID: `txt_${step}`, delta: 'looking at **the file** and `running` it.' },
    { ...b, type: 'text', part: { id: `txt_${step}`, messageID: `msg_${step}`, text: `Step ${step}: looking at **the file** and \`running\` it.` } },
    { ...b, type: 'tool_start', step, part: part({ status: 'running', input }) },
    { ...b, type: 'tool_use', step, part: part({ status: 'completed', input, output: OUTPUT, elapsedMs: 12 }) },
    { ...b, type: 'step_finish', part: { id: `sf_${step}`, step, reason: 'tool-calls', tokens: TOKENS } },
  ];
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted.at(-1) };
}

const transcript = new Transcript(); // the default limit, as the extension uses it
transcript.prompt('a long task');
for (let step = 1; step <= STEPS; step += 1) {
  for (const event of stepEvents(step)) {
    transcript.apply(event);
  }
}
transcript.takeChanges();
const rows = transcript.entries.length;
const fullHtml = renderEntries(transcript.entries);

const incremental = [];
const full = [];
let lastPatch = [];
for (let i = 0; i < SAMPLES; i += 1) {
  const events = stepEvents(STEPS + 1 + i);
  for (const event of events) {
    const t0 = performance.now();
    transcript.apply(event);
    const changes = transcript.takeChanges();
    const patch = [];
    for (const key of changes.keys) {
      const entry = transcript.entry(key);
      if (entry) {
        patch.push({ key, html: renderEntry(entry) });
      }
    }
    incremental.push(performance.now() - t0);
    lastPatch = patch;
  }
  if (i < 20) {
    const t0 = performance.now();
    renderEntries(transcript.entries);
    full.push(performance.now() - t0);
  }
}

const result = {
  steps: STEPS,
  rows,
  pageKiB: Math.round(fullHtml.length / 1024),
  appendOneEventMs: summary(incremental),
  renderEveryRowMs: summary(full),
};
console.log(JSON.stringify(result, null, 2));

const dump = process.argv.indexOf('--dump');
if (dump > 0) {
  const more = new Transcript();
  more.takeChanges();
  const patches = [];
  for (const event of stepEvents(STEPS + 1)) {
    more.apply(event);
    const changes = more.takeChanges();
    patches.push([...changes.keys].map((key) => ({ key, html: renderEntry(more.entry(key)) })));
  }
  writeFileSync(process.argv[dump + 1], JSON.stringify({ html: fullHtml, patches, lastPatch }));
}
