// Review Changes: what each changed file held before the run (buffer snapshots, git, created
// files, unknown), and keep/revert per file. git is real (temporary repositories); the editor
// side (diff editor, WorkspaceEdit) is a recording stand-in.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';

import { ChangeTracker, editedUris } from '../../src/changes.js';
import type { GitOps } from '../../src/changes.js';
import { gitOps, parseStatus } from '../../src/git.js';
import type { AgentEvent } from '../../src/protocol.js';
import { ReviewCommands } from '../../src/review.js';
import type { ReviewEditor } from '../../src/review.js';
import { FakeHost } from '../helpers/fakes.js';

const SESSION = 'ses_r';
const GEN = 'gen-r';
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function repo(files: Record<string, string>, commit = true): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'lsp-agent-review-'));
  dirs.push(dir);
  const git = (...args: string[]): void => {
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: dir, stdio: 'ignore' });
  };
  git('init', '-q');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  if (commit) {
    git('add', '-A');
    git('commit', '-q', '-m', 'base');
  }
  return dir;
}

function toolUse(tool: string, written: string[], status: 'completed' | 'error' = 'completed'): AgentEvent {
  return {
    sessionID: SESSION,
    generation: GEN,
    type: 'tool_use',
    step: 1,
    part: { id: `p-${tool}`, messageID: 'm', callID: `c-${tool}-${written.join()}`, tool, state: { status, input: {}, output: 'OK', metadata: { written } } },
  };
}

const start: AgentEvent = { sessionID: SESSION, generation: GEN, type: 'step_start', step: 1, maxSteps: 40 };

function finish(filesChanged: string[], extra: Partial<Extract<AgentEvent, { type: 'run_finish' }>> = {}): AgentEvent {
  return {
    sessionID: SESSION,
    generation: GEN,
    type: 'run_finish',
    stopReason: 'final',
    verification: 'not_run',
    steps: 1,
    toolCalls: 1,
    toolErrors: 0,
    tokens: { input: 1, output: 1, reasoning: 0, unknown: false },
    filesChanged,
    model: 'scripted',
    scripted: true,
    ...extra,
  };
}

class FakeReviewEditor implements ReviewEditor {
  readonly diffs: { path: string; before: string; title: string }[] = [];
  readonly restored: { path: string; before: string | null }[] = [];
  active: string | undefined;
  accept = true;

  showDiff(path: string, before: string, title: string): Promise<void> {
    this.diffs.push({ path, before, title });
    return Promise.resolve();
  }

  restore(path: string, before: string | null): Promise<boolean> {
    this.restored.push({ path, before });
    return Promise.resolve(this.accept);
  }

  activePath(): string | undefined {
    return this.active;
  }
}

describe('ChangeTracker: the text before the run', () => {
  it('takes an open buffer\'s text from just before the applyEdit, and only the first one', async () => {
    const tracker = new ChangeTracker(undefined);
    tracker.observe(SESSION, start);
    tracker.beforeApplyEdit(SESSION, GEN, 'a.txt', 'original\n');
    tracker.beforeApplyEdit(SESSION, GEN, 'a.txt', 'after the first edit\n');
    tracker.observe(SESSION, toolUse('apply_patch', ['a.txt']));
    const run = tracker.latest()!;
    assert.deepEqual(await tracker.baseline(run, run.files.get('a.txt')!), { kind: 'text', text: 'original\n', source: 'buffer' });
  });

  it('takes a clean file written on disk from git\'s commit, and knows new files did not exist', async () => {
    const dir = repo({ 'src/a.py': 'x = 1\n', '.gitignore': 'build/\n' });
    const tracker = new ChangeTracker(gitOps(dir));
    await tracker.prepare();
    tracker.observe(SESSION, start);
    // the agent writes after the snapshot
    writeFileSync(path.join(dir, 'src/a.py'), 'x = 2\n');
    writeFileSync(path.join(dir, 'new.txt'), 'new\n');
    mkdirSync(path.join(dir, 'build'));
    writeFileSync(path.join(dir, 'build/out.txt'), 'o\n');
    tracker.observe(SESSION, toolUse('apply_patch', ['src/a.py', 'new.txt']));
    tracker.observe(SESSION, toolUse('write_file', ['made.txt']));
    tracker.observe(SESSION, finish(['build/out.txt', 'made.txt', 'new.txt', 'src/a.py']));
    const run = tracker.latest()!;
    const of = (p: string) => tracker.baseline(run, run.files.get(p)!);
    assert.deepEqual(await of('src/a.py'), { kind: 'text', text: 'x = 1\n', source: 'git' });
    assert.deepEqual(await of('new.txt'), { kind: 'absent', source: 'git' });
    assert.deepEqual(await of('made.txt'), { kind: 'absent', source: 'created' });
    assert.equal((await of('build/out.txt')).kind, 'unknown', 'an ignored file may have existed');
  });

  it('does not guess for a file that had uncommitted changes when the run started', async () => {
    const dir = repo({ 'a.txt': 'committed\n' });
    writeFileSync(path.join(dir, 'a.txt'), 'the user\'s uncommitted work\n');
    const tracker = new ChangeTracker(gitOps(dir));
    await tracker.prepare();
    tracker.observe(SESSION, start);
    tracker.observe(SESSION, toolUse('apply_patch', ['a.txt']));
    const run = tracker.latest()!;
    const baseline = await tracker.baseline(run, run.files.get('a.txt')!);
    assert.ok(baseline.kind === 'unknown');
    assert.match(baseline.reason, /uncommitted changes/);
  });

  it('works in a workspace folder inside the repository (paths get the prefix)', async () => {
    const dir = repo({ 'pkg/lib/m.py': 'v = 1\n' });
    const tracker = new ChangeTracker(gitOps(path.join(dir, 'pkg')));
    await tracker.prepare();
    tracker.observe(SESSION, start);
    tracker.observe(SESSION, toolUse('apply_patch', ['lib/m.py']));
    const run = tracker.latest()!;
    assert.deepEqual(await tracker.baseline(run, run.files.get('lib/m.py')!), { kind: 'text', text: 'v = 1\n', source: 'git' });
  });

  it('says so outside git, and for files a command changed', async () => {
    const plain = mkdtempSync(path.join(tmpdir(), 'lsp-agent-nogit-'));
    dirs.push(plain);
    const tracker = new ChangeTracker(gitOps(plain));
    await tracker.prepare();
    tracker.observe(SESSION, start);
    tracker.observe(SESSION, toolUse('apply_patch', ['a.txt']));
    tracker.observe(SESSION, finish(['a.txt'], { invalidatedBy: { paths: ['gen.txt'], by: 'command', step: 1, tool: 'run_command' } }));
    const run = tracker.latest()!;
    const a = await tracker.baseline(run, run.files.get('a.txt')!);
    const gen = await tracker.baseline(run, run.files.get('gen.txt')!);
    assert.match(a.kind === 'unknown' ? a.reason : '', /not a git repository/);
    assert.match(gen.kind === 'unknown' ? gen.reason : '', /command the agent ran/);
  });

  it('ignores failed tool calls and other sessions\' generations stay apart', () => {
    const tracker = new ChangeTracker(undefined);
    tracker.observe(SESSION, start);
    tracker.observe(SESSION, toolUse('apply_patch', ['a.txt'], 'error'));
    assert.equal(tracker.latest(), undefined);
  });

  it('a prepared git state older than a minute is not used (taken again at the first event)', async () => {
    let now = 0;
    let snapshots = 0;
    const git: GitOps = {
      snapshot: () => {
        snapshots += 1;
        return Promise.resolve({ head: null, prefix: '', dirty: new Set<string>() });
      },
      show: () => Promise.resolve(null),
      ignored: () => Promise.resolve(false),
    };
    const tracker = new ChangeTracker(git, 10, () => now);
    await tracker.prepare();
    now = 60_001;
    tracker.observe(SESSION, start);
    assert.equal(snapshots, 2);
  });

  it('editedUris reads documentChanges text edits and changes maps', () => {
    assert.deepEqual(
      editedUris({
        documentChanges: [
          { textDocument: { uri: 'file:///w/a.txt', version: 3 }, edits: [] },
          { kind: 'rename', oldUri: 'file:///w/b', newUri: 'file:///w/c' },
          { textDocument: { uri: 'file:///w/a.txt', version: 3 }, edits: [] },
        ],
      }),
      ['file:///w/a.txt'],
    );
    assert.deepEqual(editedUris({ changes: { 'file:///w/x': [] } }), ['file:///w/x']);
    assert.deepEqual(editedUris(null), []);
  });

  it('parseStatus reads porcelain -z output', () => {
    assert.deepEqual([...parseStatus(' M a.txt\0?? dir/new file.txt\0')], ['a.txt', 'dir/new file.txt']);
  });
});

describe('Review Changes', () => {
  function reviewed(): { tracker: ChangeTracker; host: FakeHost; editor: FakeReviewEditor; review: ReviewCommands } {
    const tracker = new ChangeTracker(undefined);
    tracker.observe(SESSION, start);
    tracker.beforeApplyEdit(SESSION, GEN, 'a.txt', 'old a\n');
    tracker.observe(SESSION, toolUse('apply_patch', ['a.txt', 'b.txt']));
    tracker.observe(SESSION, toolUse('write_file', ['c.txt']));
    tracker.observe(SESSION, finish(['a.txt', 'b.txt', 'c.txt']));
    const host = new FakeHost();
    const editor = new FakeReviewEditor();
    return { tracker, host, editor, review: new ReviewCommands(host, tracker, editor, silent) };
  }

  it('lists each file with what its before-text is, shows the diff, and reverts through the editor', async () => {
    const { tracker, host, editor, review } = reviewed();
    host.pickIndex = 0;
    host.choice = 'Revert';
    await review.review();
    assert.deepEqual(
      host.picks[0]!.map((p) => [p.label, p.description, p.detail]),
      [
        ['a.txt', 'edited in its open buffer', 'before: the buffer before the edit'],
        ['b.txt', 'written on disk', 'cannot be reverted here: written on disk while not open in the editor, and the workspace is not a git repository'],
        ['c.txt', 'created', 'before: did not exist'],
      ],
    );
    assert.deepEqual(editor.diffs, [{ path: 'a.txt', before: 'old a\n', title: 'a.txt (before the run ↔ now)' }]);
    assert.deepEqual(editor.restored, [{ path: 'a.txt', before: 'old a\n' }]);
    assert.equal(tracker.latest()!.files.get('a.txt')!.state, 'reverted');
    assert.match(host.last('flash')!, /reverted a.txt \(Undo brings the change back\)/);
  });

  it('reverting a created file deletes it; keeping changes nothing on disk', async () => {
    const { tracker, editor, review } = reviewed();
    await review.revert('c.txt');
    assert.deepEqual(editor.restored, [{ path: 'c.txt', before: null }]);
    editor.active = 'a.txt';
    await review.keep();
    assert.equal(tracker.latest()!.files.get('a.txt')!.state, 'kept');
    assert.equal(editor.restored.length, 1);
  });

  it('refuses to revert a file whose before-text is unknown, and says why', async () => {
    const { host, editor, review } = reviewed();
    await review.revert('b.txt');
    assert.deepEqual(editor.restored, []);
    assert.match(host.last('warning')!, /b.txt cannot be reverted here: written on disk while not open/);
  });

  it('a revert VS Code refuses stays pending and is reported', async () => {
    const { tracker, host, editor, review } = reviewed();
    editor.accept = false;
    await review.revert('a.txt');
    assert.equal(tracker.latest()!.files.get('a.txt')!.state, 'pending');
    assert.match(host.last('error')!, /did not apply the revert of a.txt/);
  });

  it('with no changed files says so', async () => {
    const host = new FakeHost();
    const review = new ReviewCommands(host, new ChangeTracker(undefined), new FakeReviewEditor(), silent);
    await review.review();
    assert.equal(host.last('info'), 'LSP Agent: no changed files to review (no run in this window changed files).');
  });
});
