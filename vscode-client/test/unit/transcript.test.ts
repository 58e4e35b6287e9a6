import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { renderMarkdown } from '../../src/markdown.js';
import type { MessageOut, RunFinishEvent } from '../../src/protocol.js';
import { Transcript, describeInput, firstLine, formatTokens, verificationNote } from '../../src/transcript.js';
import type { FinishEntry, ToolEntry } from '../../src/transcript.js';
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
    assert.match(html, /class="entry finish verification-not_run"[^>]*><div class="verdict"><span class="badge">not run<\/span> Not run: no check ran in this task.<\/div><div class="facts">stop: final/);
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

function finishWith(extra: Partial<RunFinishEvent>): Transcript {
  const events = runEvents();
  const finish = { ...(events.at(-1) as RunFinishEvent), ...extra };
  return fed([...events.slice(0, -1), finish]);
}

describe('a verification downgrade', () => {
  it('is explained with the server\'s reason in the transcript and its HTML', () => {
    const transcript = finishWith({
      verificationReason: "result.txt written by the agent's apply_patch at step 3 after the last check (it had passed)",
      invalidatedBy: { paths: ['result.txt'], by: 'agent_tool', step: 3, tool: 'apply_patch' },
    });
    const line = transcript.lines().at(-1)!;
    assert.match(line, /Why not verified: result\.txt written by the agent's apply_patch at step 3 after the last check \(it had passed\)\. The checks have to run again/);
    const html = renderEntries(transcript.entries);
    assert.match(html, /<div class="downgrade" role="note" aria-label="Why not verified">Why not verified: result\.txt written by the agent&#39;s apply_patch/);
  });

  it('is explained from invalidatedBy alone when the reason is missing', () => {
    const transcript = finishWith({ invalidatedBy: { paths: ['a.py', 'b.py'], by: 'command', step: 2, tool: 'run_command' } });
    const entry = transcript.entries.at(-1) as FinishEntry;
    assert.equal(
      verificationNote(entry),
      'Why not verified: a.py, b.py written by a command the agent ran (run_command, step 2) after the last check. The checks have to run again (ask the agent to verify) for a verified result.',
    );
  });

  it('says nothing when there was no downgrade', () => {
    const transcript = fed();
    assert.equal(verificationNote(transcript.entries.at(-1) as FinishEntry), undefined);
    assert.ok(!renderEntries(transcript.entries).includes('downgrade'));
  });
});

describe('model text as Markdown', () => {
  it('renders emphasis, code, lists and http links', () => {
    const html = renderMarkdown('**bold** and `x < 1`\n\n- one\n- two\n\n```py\nprint(1)\n```\n\n[docs](https://example.org/a)');
    assert.match(html, /<strong>bold<\/strong>/);
    assert.match(html, /<code>x &lt; 1<\/code>/);
    assert.match(html, /<li>one<\/li>/);
    assert.match(html, /<pre><code class="language-py">print\(1\)\n<\/code><\/pre>/);
    assert.match(html, /<a href="https:\/\/example.org\/a" rel="noopener noreferrer">docs<\/a>/);
  });

  it('never lets raw HTML, scripts, images or unsafe links through', () => {
    const hostile = [
      '<script>alert(1)</script>',
      '<img src=x onerror=alert(1)>',
      '<iframe src="https://evil"></iframe>',
      '[click](javascript:alert(1))',
      '[file](file:///etc/passwd)',
      '[data](data:text/html;base64,PHNjcmlwdD4=)',
      '![pixel](https://evil/pixel.png)',
      '<a href="javascript:alert(1)">x</a>',
      '[rel](vscode://command/x)',
    ].join('\n\n');
    const html = renderMarkdown(hostile);
    assert.ok(!/<script|<img|<iframe|<a href="javascript|href="file|href="data|href="vscode/i.test(html), html);
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  });

  it('is used for model text in the transcript HTML, and user prompts stay plain', () => {
    const transcript = new Transcript();
    transcript.prompt('**not markdown**');
    transcript.apply({ sessionID: SESSION, generation: GEN, type: 'text', part: { id: 't', messageID: 'm', text: 'Done: **fixed**' } });
    const html = renderEntries(transcript.entries);
    assert.match(html, /<div class="entry text markdown" data-key="text:t"><button type="button" class="copy" data-copy="text"[^>]*>Copy<\/button><p>Done: <strong>fixed<\/strong><\/p>/);
    assert.match(html, /<pre>\*\*not markdown\*\*<\/pre>/);
  });
});

describe('webview controls', () => {
  it('the page has a Stop button (hidden until a task runs) and a Sessions button, with stable ids and labels', () => {
    const page = renderShell({ nonce: 'n', cspSource: 'vscode-resource:', scriptUri: 's', styleUri: 'c' });
    assert.match(page, /<button type="button" id="stop" class="stop" aria-label="Stop"[^>]*data-command="lspAgent.cancel" hidden>/);
    assert.match(page, /<button type="button" id="sessions" aria-label="Past sessions"[^>]*data-command="lspAgent.openSession">/);
  });

  it('a run that changed files ends with a Review changes button for that generation', () => {
    const html = renderEntries(finishWith({ filesChanged: ['result.txt'] }).entries);
    assert.match(html, /<button type="button" class="review" data-command="lspAgent.reviewChanges" data-arg="gen-1" aria-label="Review changes">Review changes \(1\)<\/button>/);
    assert.ok(!renderEntries(fed().entries).includes('Review changes'));
  });
});

describe('a stored session as a transcript', () => {
  it('shows prompts, text, reasoning and tool calls with their results; skips harness notes', () => {
    const messages: MessageOut[] = [
      { id: 'm1', role: 'user', generation: 'g1', step: 0, parts: [{ id: 'u1', type: 'text', text: 'fix it', synthetic: false }] },
      {
        id: 'm2',
        role: 'assistant',
        generation: 'g1',
        step: 1,
        parts: [
          { id: 'r1', type: 'reasoning', text: 'look first' },
          { id: 'c1', type: 'tool_call', callID: 'call_1', name: 'read_file', arguments: '{"path": "a.txt"}' },
          { id: 'c2', type: 'tool_call', callID: 'call_2', name: 'run_command', arguments: '{"argv": ["make"]}' },
        ],
      },
      {
        id: 'm3',
        role: 'tool',
        generation: 'g1',
        step: 1,
        parts: [{ id: 't1', type: 'tool_result', callID: 'call_1', name: 'read_file', ok: true, output: 'OK: a.txt lines 1-1 of 1', elapsedMs: 2 }],
      },
      { id: 'm4', role: 'user', generation: 'g1', step: 2, parts: [{ id: 'n1', type: 'text', text: 'reminder', synthetic: true }] },
      { id: 'm5', role: 'assistant', generation: 'g1', step: 2, parts: [{ id: 'x1', type: 'text', text: 'Done.', synthetic: false }] },
    ];
    const transcript = new Transcript();
    transcript.history(messages);
    assert.deepEqual(transcript.lines(), [
      '>> fix it',
      '-- step 1',
      '(thinking) look first',
      '  ✓ read_file a.txt → OK: a.txt lines 1-1 of 1',
      '  ✗ run_command make → no result was stored',
      '-- step 2',
      'Done.',
      '== Run ended: interrupted (a call has no stored result) · 2 steps · 2 tool calls (0 errors) · no check ran',
    ]);
  });
});
