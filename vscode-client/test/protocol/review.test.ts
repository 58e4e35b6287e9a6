// Against the real server: Review Changes gets the right before-text for each kind of write (an
// open buffer's applyEdit, a disk write of a file that is not open, a new file) and reverting
// all of them gives back the committed workspace; a verification downgrade is explained; past
// sessions are listed (agent/sessions) and reopened (agent/session pages).

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

import { ChangeTracker, editedUris } from '../../src/changes.js';
import { gitOps } from '../../src/git.js';
import { Methods } from '../../src/protocol.js';
import { ReviewCommands } from '../../src/review.js';
import type { ReviewEditor } from '../../src/review.js';
import { FakeHost } from '../helpers/fakes.js';
import { Editor, PYTHON, fixture, serverMethods, workspace } from './harness.js';

const TEST = { timeout: 90_000 };
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

function absolutePython(): string {
  const result = spawnSync(PYTHON, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' });
  return result.stdout.trim() || PYTHON;
}

function git(root: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: root, encoding: 'utf8' });
}

/** ReviewEditor over the protocol harness: an open buffer is replaced and saved (as the
 *  WorkspaceEdit + save of the extension), a closed file is written or deleted. */
class HarnessReviewEditor implements ReviewEditor {
  readonly diffs: string[] = [];
  constructor(private readonly editor: Editor) {}
  showDiff(file: string): Promise<void> {
    this.diffs.push(file);
    return Promise.resolve();
  }
  async restore(file: string, before: string | null): Promise<boolean> {
    const full = path.join(this.editor.root, file);
    if (before === null) {
      unlinkSync(full);
      return true;
    }
    if (!(await this.editor.replaceAndSave(file, before))) {
      writeFileSync(full, before);
    }
    return true;
  }
  activePath(): string | undefined {
    return undefined;
  }
}

describe('protocol: review changes, downgrade, past sessions (real server)', () => {
  it('reverting every change of a run restores the committed files; the downgrade is explained', TEST, async () => {
    const check = 'import pathlib, sys\nsys.exit(0 if pathlib.Path("result.txt").read_text().strip() == "4" else 1)\n';
    const config = `[[tools.verify]]\nkind = "test"\nargv = [${JSON.stringify(absolutePython())}, "check.py"]\n`;
    const root = workspace({ 'result.txt': '5', 'other.txt': 'old\n', 'check.py': check, '.lsp-agent/config.toml': config });
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'base');
    const tracker = new ChangeTracker(gitOps(root));
    const editor = await Editor.start(root, { model: 'scripted/demo', script: fixture('review.json') }, { beforeRun: () => tracker.prepare() });
    try {
      editor.client.onAgentEvent((sessionID, event) => tracker.observe(sessionID, event));
      editor.beforeApplyEdit = (edit) => {
        const { sessionID, generation } = editor.client.snapshot;
        for (const uri of editedUris(edit)) {
          const text = editor.text(uri);
          if (sessionID && generation && text !== undefined) {
            tracker.beforeApplyEdit(sessionID, generation, path.relative(root, fileURLToPath(uri)), text);
          }
        }
      };
      await editor.open('result.txt');
      const run = await editor.client.run('fix result.txt');
      const finish = await editor.client.waitForFinish(run.generation);

      // the downgrade: verified at step 3, then other.txt was written
      assert.equal(finish.verification, 'not_run');
      assert.ok(finish.invalidatedBy);
      assert.equal(finish.invalidatedBy.by, 'agent_tool');
      assert.deepEqual(finish.invalidatedBy.paths, ['other.txt']);
      const last = editor.client.transcript.lines().at(-1)!;
      assert.match(last, /Why not verified: other\.txt written by the agent's apply_patch at step 4 after the last check \(it had verified\)\./);
      assert.deepEqual([...finish.filesChanged].sort(), ['new.txt', 'other.txt', 'result.txt']);

      // what each file held before the run
      const changes = tracker.latest(run.generation)!;
      const before = async (file: string) => tracker.baseline(changes, changes.files.get(file)!);
      assert.deepEqual(await before('result.txt'), { kind: 'text', text: '5', source: 'buffer' });
      assert.deepEqual(await before('other.txt'), { kind: 'text', text: 'old\n', source: 'git' });
      assert.deepEqual(await before('new.txt'), { kind: 'absent', source: 'created' });

      // revert all three, as the user would from Review Changes
      const host = new FakeHost();
      const reviewEditor = new HarnessReviewEditor(editor);
      const review = new ReviewCommands(host, tracker, reviewEditor, silent);
      host.choice = 'Revert';
      for (let i = 0; i < 3; i++) {
        host.pickIndex = i;
        await review.review(run.generation);
      }
      assert.deepEqual(reviewEditor.diffs, ['result.txt', 'new.txt', 'other.txt']);
      assert.equal(readFileSync(path.join(root, 'result.txt'), 'utf8'), '5');
      assert.equal(readFileSync(path.join(root, 'other.txt'), 'utf8'), 'old\n');
      assert.ok(!existsSync(path.join(root, 'new.txt')));
      assert.equal(git(root, 'status', '--porcelain', '--untracked-files=all', '--', 'result.txt', 'other.txt', 'new.txt'), '');
      assert.ok([...changes.files.values()].every((f) => f.state === 'reverted'));
    } finally {
      await editor.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('agent/sessions lists past sessions; one reopened shows its transcript and the next run continues it', TEST, async (t) => {
    const methods = serverMethods();
    if (!methods.has(Methods.sessions) || !methods.has(Methods.session)) {
      t.skip('this lsp-agent server does not offer agent/sessions and agent/session');
      return;
    }
    const root = workspace();
    const editor = await Editor.start(root, { model: 'scripted/demo', script: fixture('run.json') });
    try {
      const first = await editor.client.run('read a.txt');
      await editor.client.waitForFinish(first.generation);
      editor.client.useSession(undefined); // New Session
      const second = await editor.client.run('read a.txt again');
      await editor.client.waitForFinish(second.generation);
      assert.notEqual(first.sessionID, second.sessionID);

      const sessions = await editor.client.sessions();
      assert.deepEqual(
        sessions.map((s) => s.sessionID),
        [second.sessionID, first.sessionID],
      );
      const opened = await editor.client.openSession(first.sessionID);
      assert.ok(opened.complete);
      assert.equal(editor.client.snapshot.sessionID, first.sessionID);
      const lines = editor.client.transcript.lines();
      assert.ok(lines.includes('>> read a.txt'), lines.join('\n'));
      assert.ok(lines.includes('  ✓ read_file a.txt → OK: a.txt lines 1-1 of 1'), lines.join('\n'));
      assert.ok(lines.includes('a.txt says hello.'), lines.join('\n'));
      assert.ok(!lines.includes('>> read a.txt again'), 'the other session is not shown');

      const third = await editor.client.run('and once more');
      assert.equal(third.sessionID, first.sessionID, 'the next task continues the reopened session');
      await editor.client.waitForFinish(third.generation);
    } finally {
      await editor.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
