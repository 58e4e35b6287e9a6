// The `/` list follows the prompt files on disk: a watcher per directory (the workspace's only while
// its prompts may be offered), a burst of file events is one refresh, and nothing fires after dispose.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { modelChoiceLabel } from '../../src/composerModel.js';
import { PromptWatch } from '../../src/promptWatch.js';
import type { PromptWatcher } from '../../src/promptWatch.js';

class FakeWatcher implements PromptWatcher {
  disposed = false;
  private readonly listeners: (() => void)[] = [];
  constructor(readonly dir: string) {}
  onDidCreate(listener: () => void): void {
    this.listeners.push(listener);
  }
  onDidChange(listener: () => void): void {
    this.listeners.push(listener);
  }
  onDidDelete(listener: () => void): void {
    this.listeners.push(listener);
  }
  /** what the file system does when a file appears, changes or goes */
  fire(): void {
    for (const listener of this.listeners) {
      listener();
    }
  }
  dispose(): void {
    this.disposed = true;
  }
}

function setup(): { watch: PromptWatch; made: FakeWatcher[]; refreshed: () => number; settled: () => Promise<void> } {
  const made: FakeWatcher[] = [];
  let refreshes = 0;
  const watch = new PromptWatch(
    (dir) => {
      const watcher = new FakeWatcher(dir);
      made.push(watcher);
      return watcher;
    },
    () => (refreshes += 1),
    5,
  );
  return { watch, made, refreshed: () => refreshes, settled: () => new Promise((resolve) => setTimeout(resolve, 50)) };
}

describe('prompt files are watched', () => {
  it('refreshes the list once for a burst of events in a watched directory', async () => {
    const { watch, made, refreshed, settled } = setup();
    watch.watch(['/home/u/.config/lsp-agent/prompts', undefined]);
    assert.deepEqual(watch.watched, ['/home/u/.config/lsp-agent/prompts']);
    made[0]!.fire();
    made[0]!.fire();
    made[0]!.fire();
    await settled();
    assert.equal(refreshed(), 1);
    made[0]!.fire(); // a later change is a later refresh
    await settled();
    assert.equal(refreshed(), 2);
    watch.dispose();
  });

  it("watches the workspace's directory only while it is allowed, and stops when it no longer is", async () => {
    const { watch, made, refreshed, settled } = setup();
    const user = '/home/u/.config/lsp-agent/prompts';
    const workspace = '/repo/.lsp-agent/prompts';
    watch.watch([user, undefined]); // not trusted: the repository's folder is not even watched
    assert.deepEqual(watch.watched, [user]);
    watch.watch([user, workspace]); // trusted
    assert.deepEqual(watch.watched, [user, workspace]);
    assert.equal(made.length, 2, 'the user watcher is kept, not made again');
    const repoWatcher = made[1]!;
    watch.watch([user, undefined]); // trust withdrawn
    assert.equal(repoWatcher.disposed, true);
    assert.deepEqual(watch.watched, [user]);
    repoWatcher.fire(); // a stray event from the dropped watcher
    await settled();
    assert.equal(refreshed(), 0);
    watch.dispose();
  });

  it('fires nothing after dispose, even with a refresh pending', async () => {
    const { watch, made, refreshed, settled } = setup();
    watch.watch(['/u']);
    made[0]!.fire();
    watch.dispose();
    await settled();
    assert.equal(refreshed(), 0);
    assert.equal(made[0]!.disposed, true);
  });
});

describe("the composer's model button", () => {
  it('names the model setting, else says whether one must be chosen', () => {
    assert.equal(modelChoiceLabel('loop/tiny', false), 'loop/tiny');
    assert.equal(modelChoiceLabel('  ', true), 'Choose a model');
    assert.equal(modelChoiceLabel(undefined, false), 'model from config');
  });
});
