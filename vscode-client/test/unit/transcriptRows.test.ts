import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import type { MessageOut } from '../../src/protocol.js';
import { copyText, editDiffs, patchDiffs, unifiedText } from '../../src/toolDetail.js';
import { renderToolRow } from '../../src/toolRowHtml.js';
import { Transcript, verificationWords } from '../../src/transcript.js';
import type { FinishEntry, ToolEntry } from '../../src/transcript.js';
import { renderEntries, renderEntry } from '../../src/transcriptHtml.js';
import { verificationChange } from '../../src/verificationChange.js';
import { resolveLinkPath } from '../../src/workspacePath.js';
import { SESSION } from '../helpers/events.js';
import { EDIT_GEN, editAndFailingCheck, finish, toolUse } from '../helpers/runs.js';

function fed(events = editAndFailingCheck()): Transcript {
  const transcript = new Transcript();
  transcript.prompt('make add work');
  for (const event of events) {
    transcript.apply(event);
  }
  return transcript;
}

function tool(transcript: Transcript, callID: string): ToolEntry {
  const entry = transcript.entry(`tool:${EDIT_GEN}:${callID}`);
  assert.ok(entry && entry.kind === 'tool');
  return entry;
}

const HOSTILE = '</pre></details><script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>';

describe('tool rows', () => {
  it('escapes hostile tool output, arguments, tool names and file paths everywhere', () => {
    const transcript = new Transcript();
    transcript.apply(toolUse('call_h', HOSTILE, { path: `"><script>alert(4)</script>`, command: HOSTILE }, { output: HOSTILE }));
    transcript.apply(
      toolUse('call_p', 'apply_patch', { path: `x" onmouseover="alert(5)`, old_text: HOSTILE, new_text: HOSTILE }, { output: HOSTILE }),
    );
    transcript.apply(toolUse('call_v', 'verify_project', {}, { output: HOSTILE, ok: false, metadata: { envelope: { status: 'failed', checks: [{ failures: [{ file: `a"><script>`, line: 1, message: HOSTILE }] }] } } }));
    const html = renderEntries(transcript.entries);
    assert.doesNotMatch(html, /<script/i);
    assert.doesNotMatch(html, /<img/i);
    assert.doesNotMatch(html, /<a href="(?!#")/i); // only the extension's own file links
    // an attribute value never closes early: every quote inside one is an entity
    assert.doesNotMatch(html, /" on\w+="/i);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(html, /data-open-path="x&quot; onmouseover=&quot;alert\(5\)"/);
  });

  it('a plain call starts collapsed; a failing check starts expanded with its failing tests and traceback', () => {
    const transcript = fed();
    const edit = renderEntry(tool(transcript, 'call_edit'));
    const check = renderEntry(tool(transcript, 'call_check'));
    assert.match(edit, /^<details class="entry tool status-completed edit" data-key="[^"]+">/);
    assert.match(check, /^<details class="entry tool status-error check-failed" data-key="[^"]+" open data-default-open>/);
    assert.match(check, /<div class="check-title">1 failing<\/div>/);
    assert.match(check, /data-open-path="tests\/test_ops.py" data-open-line="7"[^>]*>tests\/test_ops.py::test_add: assert 5 == 4<\/a>/);
    assert.match(check, /<pre class="traceback">____ test_add ____\ndef test_add\(\):\n&gt; {7}assert add\(2, 2\) == 4\nE {7}assert 5 == 4<\/pre>/);
    assert.match(check, /<span class="error-kind">tool_failure<\/span>/);
    assert.match(check, /<span class="elapsed">12 ms<\/span>/);
  });

  it('a passed check stays collapsed', () => {
    const transcript = new Transcript();
    transcript.apply(toolUse('call_ok', 'verify_project', {}, { output: 'verify_project: passed', metadata: { envelope: { status: 'passed', checks: [] } } }));
    const html = renderEntry(tool(transcript, 'call_ok'));
    assert.doesNotMatch(html, / open/);
    assert.match(html, /The check passed\./);
  });

  it('draws an edit as a unified diff with the file as a link to where the new text landed', () => {
    const html = renderEntry(tool(fed(), 'call_edit'));
    assert.match(html, /<a href="#" class="file-link" data-open-path="calc\/ops.py" data-open-find=" {4}return a \+ b \+ 1"/);
    assert.match(html, /<span class="d-del">- {4}return a - b<\/span><span class="d-add">\+ {4}return a \+ b \+ 1<\/span>/);
    assert.match(html, /data-command="lspAgent.reviewChanges" data-arg="gen-edit"[^>]*>Diff editor</);
  });

  it('reads multi-file patches and new files, and copies the diff as unified text', () => {
    const diffs = patchDiffs(
      ['*** Begin Patch', '*** Update File: a.py', '@@ def f():', ' x = 1', '-y = 2', '+y = 3', '*** Add File: b.py', '+print(1)', '*** Delete File: c.py', '*** End Patch'].join('\n'),
    );
    assert.deepEqual(
      diffs.map((d) => [d.path, d.change, d.lines.map((l) => l.kind).join(',')]),
      [
        ['a.py', 'update', 'hunk,ctx,del,add'],
        ['b.py', 'add', 'add'],
        ['c.py', 'delete', ''],
      ],
    );
    assert.equal(unifiedText(diffs[0]!), '--- a/a.py\n+++ b/a.py\n@@ def f():\n x = 1\n-y = 2\n+y = 3');
    const created = editDiffs('write_file', { path: 'n.txt', content: 'one\ntwo\n' });
    assert.equal(unifiedText(created[0]!), '--- /dev/null\n+++ b/n.txt\n+one\n+two');
  });

  it('shows a long output as head and tail with "open in editor", and copy takes all of it', () => {
    const output = Array.from({ length: 200 }, (_, i) => `line ${i + 1}`).join('\n');
    const transcript = new Transcript();
    transcript.apply(toolUse('call_long', 'run_command', { command: 'make' }, { output }));
    const entry = tool(transcript, 'call_long');
    const html = renderToolRow(entry);
    assert.match(html, /Output \(200 lines\)/);
    assert.match(html, /class="open-output"/);
    assert.match(html, /line 30\n?<\/pre>/);
    assert.match(html, /150 lines not shown/);
    assert.match(html, /line 181\n/);
    assert.doesNotMatch(html, /line 100\n/);
    assert.equal(copyText(entry, 'output'), output);
    assert.equal(copyText(entry, 'args'), '{\n  "command": "make"\n}');
    assert.equal(copyText(entry, 'diff:0'), undefined);
  });
});

describe('a message can be copied', () => {
  it('copies a finished message as the model wrote it (its Markdown), and offers no copy while it streams', () => {
    const text = '## Done\n\nChanged `calc.py`: **add** now adds.';
    const done = { kind: 'text' as const, key: 'text:p1', generation: EDIT_GEN, text, final: true };
    const streaming = { ...done, key: 'text:p2', final: false };
    assert.equal(copyText(done, 'text'), text);
    assert.equal(copyText(streaming, 'text'), undefined);
    assert.equal(copyText(done, 'output'), undefined);
    assert.match(renderEntry(done), /<button type="button" class="copy" data-copy="text" title="Copy the message">/);
    assert.doesNotMatch(renderEntry(streaming), /data-copy/);
  });
});

describe('the run footer', () => {
  function footer(overrides: Parameters<typeof finish>[0]): FinishEntry {
    const transcript = fed();
    transcript.apply(finish(overrides));
    const entry = transcript.entry(`finish:${EDIT_GEN}`);
    assert.ok(entry && entry.kind === 'finish');
    return entry;
  }

  it('says in words what the verification means', () => {
    assert.equal(verificationWords(footer({ verification: 'verified' })), 'Verified: the check passed after the last write.');
    assert.match(verificationWords(footer({ verification: 'failed' })), /^Failed: the last check failed/);
    assert.equal(
      verificationWords(footer({ verification: 'not_run', invalidatedBy: { paths: ['calc/ops.py'], by: 'outside_process' } })),
      'Not verified: a change outside the agent (your edit or revert, or another program) changed calc/ops.py after the check.',
    );
    const denied = new Transcript();
    denied.apply(toolUse('call_v', 'verify_project', {}, { output: 'ERROR: refused: verify_project', ok: false, errorKind: 'denied' }));
    denied.apply(finish({ verification: 'not_run', toolErrors: 1 }));
    const entry = denied.entry(`finish:${EDIT_GEN}`) as FinishEntry;
    assert.equal(verificationWords(entry), 'Not run: the check was denied.');
    assert.match(renderEntry(entry), /<div class="verdict"><span class="badge">not run<\/span> Not run: the check was denied.<\/div>/);
  });

  it('changes when a later edit invalidates the check, and only that row is redrawn', () => {
    const transcript = fed();
    transcript.apply(finish({ verification: 'verified', toolErrors: 0 }));
    transcript.takeChanges();
    const change = verificationChange({
      sessionID: SESSION,
      verification: 'not_run',
      verificationReason: 'calc/ops.py written by a change outside the agent after the last check (it had verified)',
      invalidatedBy: { paths: ['calc/ops.py'], by: 'outside_process' },
    });
    assert.ok(change);
    assert.equal(transcript.invalidate(change), true);
    const entry = transcript.entry(`finish:${EDIT_GEN}`) as FinishEntry;
    assert.equal(
      verificationWords(entry),
      'Not verified: a change outside the agent (your edit or revert, or another program) changed calc/ops.py after the check after the run.',
    );
    assert.match(renderEntry(entry), /class="entry finish verification-not_run"/);
    assert.deepEqual(transcript.takeChanges(), { keys: new Set([`finish:${EDIT_GEN}`]), removed: [], structural: false });
  });

  it('names the user\'s own revert through Review Changes as such', () => {
    const transcript = fed();
    transcript.apply(finish({ verification: 'verified', toolErrors: 0 }));
    transcript.invalidate({ verification: 'not_run', invalidatedBy: { paths: ['calc/ops.py'], by: 'outside_process' }, revertedByUser: true });
    const entry = transcript.entry(`finish:${EDIT_GEN}`) as FinishEntry;
    assert.equal(verificationWords(entry), 'Not verified: your revert changed calc/ops.py after the check after the run.');
  });

  it('drops a malformed agent/verificationChanged', () => {
    assert.equal(verificationChange(null), undefined);
    assert.equal(verificationChange({ sessionID: SESSION, verification: 'great' }), undefined);
    assert.equal(verificationChange({ sessionID: SESSION, verification: 'not_run', invalidatedBy: { paths: 'a', by: 'outside_process' } }), undefined);
    assert.equal(verificationChange({ sessionID: SESSION, verification: 'not_run', invalidatedBy: { paths: ['a'], by: 'someone' } }), undefined);
  });
});

describe('incremental rendering', () => {
  it('reports only new or changed rows; a prompt put before its run is a structural change', () => {
    const transcript = new Transcript();
    assert.equal(transcript.takeChanges().structural, true); // a new transcript is drawn whole once
    transcript.apply({ sessionID: SESSION, generation: EDIT_GEN, type: 'step_start', step: 1, maxSteps: 40 });
    transcript.apply({ sessionID: SESSION, generation: EDIT_GEN, type: 'text_delta', partID: 'p1', delta: 'Hel' });
    assert.deepEqual(transcript.takeChanges(), { keys: new Set([`step:${EDIT_GEN}:1`, 'text:p1']), removed: [], structural: false });
    transcript.apply({ sessionID: SESSION, generation: EDIT_GEN, type: 'text_delta', partID: 'p1', delta: 'lo' });
    assert.deepEqual(transcript.takeChanges(), { keys: new Set(['text:p1']), removed: [], structural: false });
    transcript.prompt('hi', 'run', EDIT_GEN);
    assert.equal(transcript.takeChanges().structural, true);
  });

  it('rows past the limit drop off the top as removals, not a redraw of everything', () => {
    const transcript = new Transcript(2);
    transcript.takeChanges();
    transcript.info('one');
    transcript.info('two');
    transcript.takeChanges();
    transcript.info('three');
    assert.deepEqual(transcript.takeChanges(), { keys: new Set(['info:3']), removed: ['info:1'], structural: false });
    assert.deepEqual(transcript.lines(), ['-- two', '-- three']);
  });
});

describe('a replayed session', () => {
  it('keeps step headers, the check rows (expanded when failing) and a stop line per run', () => {
    const messages: MessageOut[] = [
      { id: 'm1', role: 'user', generation: 'g1', parts: [{ id: 'u1', type: 'text', text: 'fix add', synthetic: false }] },
      { id: 'm2', role: 'assistant', generation: 'g1', step: 1, parts: [{ id: 'c1', type: 'tool_call', callID: 'k1', name: 'verify_project', arguments: '{}' }] },
      {
        id: 'm3',
        role: 'tool',
        generation: 'g1',
        step: 1,
        parts: [{ id: 'r1', type: 'tool_result', callID: 'k1', name: 'verify_project', ok: false, output: 'failed\n  output:\n    E assert 5 == 4', errorKind: 'tool_failure', metadata: { envelope: { status: 'failed', checks: [{ failures: [{ file: 't.py', line: 3, message: 't.py::test_add' }] }] } }, elapsedMs: 5 }],
      },
      { id: 'm4', role: 'assistant', generation: 'g1', step: 2, parts: [{ id: 't1', type: 'text', text: 'It fails.', synthetic: false }] },
      { id: 'm5', role: 'user', generation: 'g2', parts: [{ id: 'u2', type: 'text', text: 'again', synthetic: false }] },
      { id: 'm6', role: 'assistant', generation: 'g2', step: 1, parts: [{ id: 't2', type: 'text', text: 'Done.', synthetic: false }] },
    ];
    const transcript = new Transcript();
    transcript.history(messages);
    assert.deepEqual(transcript.lines(), [
      '>> fix add',
      '-- step 1',
      '  ✗ verify_project → failed',
      '-- step 2',
      'It fails.',
      '== Run ended: the agent answered · 2 steps · 1 tool call (1 error) · last check: failed',
      '>> again',
      '-- step 1',
      'Done.',
      '== Run ended: the agent answered · 1 step · 0 tool calls (0 errors) · no check ran',
    ]);
    const check = transcript.entries.find((e) => e.kind === 'tool');
    assert.ok(check);
    assert.match(renderEntry(check), / open data-default-open>.*t\.py::test_add.*<pre class="traceback">E assert 5 == 4<\/pre>/s);
  });
});

describe('file links', () => {
  it('open only files inside the workspace: never .., an absolute path, a URI or a symlink out', () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'links-'));
    const root = path.join(base, 'ws');
    fs.mkdirSync(path.join(root, 'src'), { recursive: true });
    fs.writeFileSync(path.join(root, 'src', 'a.py'), 'x = 1\n');
    const canary = path.join(base, 'canary-secret.txt');
    fs.writeFileSync(canary, 'CANARY-7f3a\n');
    fs.symlinkSync(base, path.join(root, 'out'));
    fs.symlinkSync(canary, path.join(root, 'notes.txt'));
    try {
      assert.deepEqual(resolveLinkPath(root, 'src/a.py'), { ok: true, file: fs.realpathSync(path.join(root, 'src', 'a.py')) });
      assert.deepEqual(resolveLinkPath(root, '../canary-secret.txt'), { ok: false, reason: 'parent' });
      assert.deepEqual(resolveLinkPath(root, 'src/../../canary-secret.txt'), { ok: false, reason: 'parent' });
      assert.deepEqual(resolveLinkPath(root, canary), { ok: false, reason: 'absolute' });
      assert.deepEqual(resolveLinkPath(root, `file://${canary}`), { ok: false, reason: 'absolute' });
      assert.deepEqual(resolveLinkPath(root, 'out/canary-secret.txt'), { ok: false, reason: 'outside' });
      assert.deepEqual(resolveLinkPath(root, 'notes.txt'), { ok: false, reason: 'outside' });
      assert.deepEqual(resolveLinkPath(root, 'src/a.py\n'), { ok: false, reason: 'control' });
      assert.deepEqual(resolveLinkPath(root, 'src/missing.py'), { ok: false, reason: 'missing' });
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });
});
