// "Review Changes": the run's edits as diffs (VS Code's diff editor: the before-text on the left,
// the file now on the right) with keep or revert per file. Revert goes through a WorkspaceEdit,
// so it is undoable. The decisions live here, over Host and ReviewEditor; the `vscode` side is
// views/reviewEditor.ts.

import type { Logger } from './agentClient.js';
import type { Baseline, ChangeTracker, FileChange, RunChanges } from './changes.js';
import type { Host, PickItem } from './host.js';

export const ReviewCommandIds = {
  review: 'lspAgent.reviewChanges',
  keep: 'lspAgent.review.keep',
  revert: 'lspAgent.review.revert',
} as const;

/** true while the latest run has changes not yet kept or reverted (editor title actions) */
export const REVIEWING_CONTEXT = 'lspAgent.reviewing';

export interface ReviewEditor {
  /** Open the diff editor: `before` (a read-only virtual document) ↔ the file as it is now. */
  showDiff(path: string, before: string, title: string): Promise<void>;
  /** Put the file back to `before` (null: delete it) with one WorkspaceEdit; false when VS Code refused. */
  restore(path: string, before: string | null): Promise<boolean>;
  /** The workspace-relative path of the review diff in the active editor, if one is active. */
  activePath(): string | undefined;
}

interface FilePick extends PickItem {
  file: FileChange;
  baseline: Baseline;
}

const ORIGIN: Record<FileChange['origin'], string> = {
  buffer: 'edited in its open buffer',
  disk: 'written on disk',
  created: 'created',
  command: 'changed by a command',
};

function describeBaseline(baseline: Baseline): string {
  switch (baseline.kind) {
    case 'text':
      return baseline.source === 'buffer' ? 'before: the buffer before the edit' : "before: git's last commit";
    case 'absent':
      return 'before: did not exist';
    case 'unknown':
      return `cannot be reverted here: ${baseline.reason}`;
  }
}

export class ReviewCommands {
  constructor(
    private readonly host: Host,
    private readonly tracker: ChangeTracker,
    private readonly editor: ReviewEditor,
    private readonly log: Logger,
  ) {}

  /** Pick one of the run's changed files and show its diff; then keep or revert it. */
  async review(generation?: string): Promise<void> {
    try {
      const run = this.tracker.latest(generation);
      if (!run || run.files.size === 0) {
        await this.host.showInfo('LSP Agent: no changed files to review (no run in this window changed files).');
        return;
      }
      const items: FilePick[] = [];
      for (const file of run.files.values()) {
        const baseline = await this.tracker.baseline(run, file);
        items.push({
          label: file.path,
          description: `${ORIGIN[file.origin]}${file.state === 'pending' ? '' : ` · ${file.state}`}`,
          detail: describeBaseline(baseline),
          file,
          baseline,
        });
      }
      const picked = await this.host.quickPick(items, {
        title: `LSP Agent: Review Changes (${run.files.size} file${run.files.size === 1 ? '' : 's'})`,
        placeHolder: 'Pick a file to see its diff, then keep or revert it',
      });
      if (!picked) {
        return;
      }
      if (picked.baseline.kind === 'unknown') {
        await this.host.showWarning(`LSP Agent: ${picked.file.path} ${describeBaseline(picked.baseline)}.`);
        return;
      }
      const before = picked.baseline.kind === 'text' ? picked.baseline.text : '';
      await this.editor.showDiff(picked.file.path, before, `${picked.file.path} (before the run ↔ now)`);
      const choice = await this.host.showInfo(`LSP Agent: keep or revert the agent's change to ${picked.file.path}?`, 'Keep', 'Revert');
      if (choice === 'Keep') {
        await this.keep(picked.file.path, run);
      } else if (choice === 'Revert') {
        await this.revert(picked.file.path, run);
      }
    } catch (error) {
      this.log.error(`Review Changes: ${String(error)}`);
      await this.host.showError(`LSP Agent: Review Changes failed: ${String(error)}`);
    }
  }

  /** Keep the change: nothing to do on disk, the file leaves the pending list. */
  async keep(path?: string, run?: RunChanges): Promise<void> {
    const target = await this.target('Keep which change?', path, run);
    if (target) {
      this.tracker.setState(target.run, target.file.path, 'kept');
      this.host.flash(`LSP Agent: kept the change to ${target.file.path}`);
    }
  }

  /** Revert the change: the file gets its before-text back through a WorkspaceEdit (undoable). */
  async revert(path?: string, run?: RunChanges): Promise<void> {
    const target = await this.target('Revert which change?', path, run);
    if (!target) {
      return;
    }
    const baseline = await this.tracker.baseline(target.run, target.file);
    if (baseline.kind === 'unknown') {
      await this.host.showWarning(`LSP Agent: ${target.file.path} ${describeBaseline(baseline)}.`);
      return;
    }
    const ok = await this.editor.restore(target.file.path, baseline.kind === 'text' ? baseline.text : null);
    if (!ok) {
      await this.host.showError(`LSP Agent: VS Code did not apply the revert of ${target.file.path}.`);
      return;
    }
    this.tracker.setState(target.run, target.file.path, 'reverted');
    this.host.flash(`LSP Agent: reverted ${target.file.path} (Undo brings the change back)`);
  }

  /** The file named, the one in the active review diff, or one picked from the pending changes. */
  private async target(title: string, path: string | undefined, given: RunChanges | undefined): Promise<{ run: RunChanges; file: FileChange } | undefined> {
    const run = given ?? this.tracker.latest();
    if (!run) {
      await this.host.showInfo('LSP Agent: no changed files to review (no run in this window changed files).');
      return undefined;
    }
    const wanted = path ?? this.editor.activePath();
    if (wanted) {
      const file = run.files.get(wanted);
      if (file) {
        return { run, file };
      }
    }
    const pending = [...run.files.values()].filter((f) => f.state === 'pending');
    if (pending.length === 0) {
      await this.host.showInfo('LSP Agent: every change of the last run was kept or reverted.');
      return undefined;
    }
    const picked = await this.host.quickPick(
      pending.map((file) => ({ label: file.path, description: ORIGIN[file.origin], file })),
      { title: `LSP Agent: ${title}` },
    );
    return picked ? { run, file: picked.file } : undefined;
  }
}
