import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Transcript, describeInput, firstLine, formatTokens } from '../../src/transcript.js';
import type { ToolEntry } from '../../src/transcript.js';
import { escapeHtml, renderEntries, renderShell } from '../../src/transcriptHtml.js';
import { GEN, SESSION, runEvents } from '../helpers/events.js';

function fed(events = runEvents()): Transcript {
  const transcript = new Transcript();
  transcript.prompt('read a');
  for (const event of events) {
    transcript.apply(event);
  }
  return transcript;
}

describe('Transcript', () => {
  it('renders a whole run: prompt, steps with usage, reasoning, tool call and result, text, stop', () => {
    assert.deepEqual(fed().lines(), [
      '>> read a',
      '-- step 1/40 · in 2,478 · out 4 · reasoning 1 tokens',
      '(thinking) Read the file first.',
      '  ✓ read_file a.txt → OK: a.txt lines 1-1 of 1',
      '-- step 2/40 · in 2,607 · out 3 tokens',
      'All done here.',
      '== stop: final · verification: not_run · 2 steps · 1 tool call (0 errors) · in 5,085 · out 7 · reasoning 1 tokens · model: scripted (probe) [scripted]',
    ]);
  });

  it('shows streaming text while deltas arrive, then the final text replaces it', () => {
    const events = runEvents();
    const transcript = fed(events.slice(0, 10)); // up to the second text delta
    assert.equal(transcript.lines().at(-1), 'All done here.▍');
    transcript.apply(events[10]!);
    assert.equal(transcript.lines().at(-1), 'All done here.');
  });

  it('keeps one entry per tool call from start to result (keyed by the call ID)', () => {
    const events = runEvents();
    const transcript = fed(events.slice(0, 5));
    const running = transcript.entries.filter((e): e is ToolEntry => e.kind === 'tool');
    assert.equal(running.length, 1);
    assert.equal(running[0]!.status, 'running');
    transcript.apply(events[5]!);
    const done = transcript.entries.filter((e): e is ToolEntry => e.kind === 'tool');
    assert.equal(done.length, 1);
    assert.equal(done[0]!.status, 'completed');
    assert.equal(done[0]!.elapsedMs, 3);
  });

  it('marks failed tool calls with their error kind', () => {
    const transcript = new Transcript();
    transcript.apply({
      sessionID: SESSION,
      generation: GEN,
      type: 'tool_use',
      step: 1,
      part: { id: 'p', messageID: 'm', callID: 'c', tool: 'run_command', state: { status: 'error', input: { argv: ['pytest', '-q'] }, output: 'ERROR: exit=1 2 failed', errorKind: 'exit_nonzero' } },
    });
    assert.deepEqual(transcript.lines(), ['  ✗ run_command pytest -q → ERROR: exit=1 2 failed']);
    assert.equal((transcript.entries[0] as ToolEntry).errorKind, 'exit_nonzero');
  });

  it('adopts the streaming reasoning when the finished part has another ID (no duplicate)', () => {
    const transcript = fed(runEvents().slice(0, 4));
    assert.equal(transcript.entries.filter((e) => e.kind === 'reasoning').length, 1);
  });

  it('settles text that was still streaming when the run ended (cancelled mid-reply)', () => {
    const events = runEvents();
    const transcript = fed([...events.slice(0, 9), events[12]!]);
    assert.ok(!transcript.lines().some((line) => line.endsWith('▍')));
  });

  it('shows notices, errors and the run error', () => {
    const transcript = new Transcript();
    transcript.apply({ sessionID: SESSION, generation: GEN, type: 'notice', kind: 'loop_guard', message: 'same call 3 times' });
    transcript.apply({ sessionID: SESSION, generation: GEN, type: 'error', error: { kind: 'http_status', message: 'HTTP 500', status: 500 } });
    assert.deepEqual(transcript.lines(), ['  ! loop_guard: same call 3 times', '  x http_status: HTTP 500']);
  });

  it('tracks a correction from sending to accepted to applied, never back', () => {
    const transcript = new Transcript();
    transcript.steer('c1', 'use tabs');
    assert.equal(transcript.lines()[0], '~> steer [sending] use tabs');
    transcript.receipt({ status: 'applied', generation: GEN, clientID: 'c1', messageID: 'msg_9' });
    transcript.receipt({ status: 'accepted', generation: GEN, clientID: 'c1' }); // late answer
    assert.deepEqual(transcript.lines(), ['~> steer [applied] use tabs']);
  });

  it('shows why a correction was rejected, and receipts of corrections it did not send', () => {
    const transcript = new Transcript();
    transcript.receipt({ status: 'rejected', generation: GEN, clientID: 'queue_que_1', reason: 'generation_ended_before_application' }, 'queued text');
    assert.deepEqual(transcript.lines(), ['~> steer [rejected (generation_ended_before_application)] queued text']);
  });

  it('puts a late prompt before the entries of its generation', () => {
    const transcript = new Transcript();
    transcript.info('earlier');
    transcript.apply(runEvents()[0]!);
    transcript.prompt('the task', 'run', GEN);
    transcript.prompt('unrelated', 'run', 'gen-x');
    assert.deepEqual(transcript.lines(), ['-- earlier', '>> the task', '-- step 1/40', '>> unrelated']);
  });

  it('drops the oldest entries beyond its limit', () => {
    const transcript = new Transcript(3);
    for (let i = 0; i < 5; i++) {
      transcript.info(`line ${i}`);
    }
    assert.deepEqual(transcript.lines(), ['-- line 2', '-- line 3', '-- line 4']);
  });
});

describe('helpers', () => {
  it('firstLine skips blank lines and cuts long ones', () => {
    assert.equal(firstLine('\n\n  OK: done\nmore'), 'OK: done');
    assert.equal(firstLine('x'.repeat(300), 10), `${'x'.repeat(9)}…`);
    assert.equal(firstLine(undefined), '');
  });

  it('describeInput prefers the path, command or argv', () => {
    assert.equal(describeInput({ path: 'src/a.py', old_text: 'x' }), 'src/a.py');
    assert.equal(describeInput({ argv: ['npm', 'test'] }), 'npm test');
    assert.equal(describeInput({}), '');
    assert.equal(describeInput('{"broken'), '{"broken');
    assert.equal(describeInput({ depth: 2 }), '{"depth":2}');
  });

  it('formatTokens shows reasoning and cache only when present', () => {
    assert.equal(formatTokens({ input: 1200, output: 5, reasoning: 0, unknown: false, cache: { read: 0 } }), 'in 1,200 · out 5 tokens');
    assert.equal(formatTokens({ input: 1, output: 2, reasoning: 3, unknown: false, cache: { read: 4 } }), 'in 1 · out 2 · reasoning 3 · cached 4 tokens');
  });
});

describe('transcript HTML', () => {
  it('escapes everything that came from the model or the user', () => {
    const transcript = new Transcript();
    transcript.prompt('<img src=x onerror=alert(1)>');
    transcript.apply({ sessionID: SESSION, generation: GEN, type: 'text', part: { id: 't', messageID: 'm', text: '</pre><script>x</script>' } });
    const html = renderEntries(transcript.entries);
    assert.ok(!html.includes('<img'));
    assert.ok(!html.includes('<script>'));
    assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.equal(escapeHtml(`"'&`), '&quot;&#39;&amp;');
  });

  it('shows tool status, step usage and the verification badge', () => {
    const html = renderEntries(fed().entries);
    assert.match(html, /class="entry tool status-completed"/);
    assert.match(html, /<span class="usage">in 2,478 · out 4 · reasoning 1 tokens<\/span>/);
    assert.match(html, /class="entry finish verification-not_run"[^>]*><span class="badge">not run<\/span> stop: final/);
    assert.match(html, /<details class="entry reasoning" data-key="reasoning:prt_r_final">/);
  });

  it('has a hint when there is nothing yet', () => {
    assert.match(renderEntries([]), /No run yet/);
  });

  it('builds the page with a nonce-only CSP and the agent input', () => {
    const page = renderShell({ nonce: 'abc123', cspSource: 'vscode-resource:', scriptUri: 'vscode-resource:/t.js', styleUri: 'vscode-resource:/t.css' });
    assert.match(page, /default-src 'none'/);
    assert.match(page, /script-src 'nonce-abc123'/);
    assert.match(page, /<script nonce="abc123" src="vscode-resource:\/t.js">/);
    assert.match(page, /<textarea id="input"/);
    assert.ok(!page.includes('unsafe-inline'));
  });
});
