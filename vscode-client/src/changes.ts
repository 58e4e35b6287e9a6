// What a run changed, and what each file held before it: the material of "Review Changes".
// The server writes a file in one of two ways (lsp_agent/server/edits.py): an open buffer gets a
// workspace/applyEdit (the client sees the text before applying it: an exact before-text), a
// file that is not open is written on disk by the server (the client only learns the path from
// the tool's `written` metadata). For those, the before-text comes from git when the file had no
// uncommitted change when the run started; otherwise it is unknown and the file cannot be
// reverted here (said so, never guessed). Pure: no `vscode`, no I/O (git is reached via GitOps).

import type { AgentEvent } from './protocol.js';
import { Listeners } from './listeners.js';

/** The workspace's git state just before a run. Paths are relative to the repository root. */
export interface GitState {
  /** the commit checked out (null in a repository without commits) */
  head: string | null;
  /** the workspace folder inside the repository (`git rev-parse --show-prefix`: '' or 'sub/') */
  prefix: string;
  /** paths that were modified, added, deleted or untracked at that moment */
  dirty: ReadonlySet<string>;
}

export interface GitOps {
  /** undefined when the workspace is not in a git repository (or git is missing) */
  snapshot(): Promise<GitState | undefined>;
  /** the file's content at `head` (repository-relative path), or null when it is not there */
  show(head: string, repoPath: string): Promise<string | null>;
  /** true when git ignores the (repository-relative) path */
  ignored(repoPath: string): Promise<boolean>;
}

/** What the file held before the run: text, nothing (it did not exist), or unknown (with why). */
export type Baseline =
  | { kind: 'text'; text: string; source: 'buffer' | 'git' }
  | { kind: 'absent'; source: 'created' | 'git' }
  | { kind: 'unknown'; reason: string };

export type ChangeState = 'pending' | 'kept' | 'reverted';

export interface FileChange {
  path: string;
  /** how it was written: into the open buffer, on disk by an edit tool, by a command the agent ran */
  origin: 'buffer' | 'disk' | 'created' | 'command';
  /** the buffer's text before the first applyEdit of this run (origin `buffer`) */
  bufferText?: string;
  state: ChangeState;
}

export interface RunChanges {
  generation: string;
  sessionID: string;
  git: Promise<GitState | undefined>;
  files: Map<string, FileChange>;
  finished: boolean;
}

/** A git state prepared before agent/run counts for the run that starts within this time. */
const PREPARED_MS = 60_000;

export class ChangeTracker {
  private runs = new Map<string, RunChanges>();
  private prepared: { git: Promise<GitState | undefined>; at: number } | undefined;
  private readonly listeners = new Listeners();

  constructor(
    private readonly git: GitOps | undefined,
    private readonly keep = 10,
    private readonly now: () => number = Date.now,
  ) {}

  /** Called just before the client sends agent/run: the git state then is the run's baseline.
   *  (A run the client did not start — a queued follow-up — takes it at its first event, when
   *  the agent may already have written: such a file then counts as dirty, i.e. unknown.) */
  async prepare(): Promise<void> {
    const git = this.snapshot();
    this.prepared = { git, at: this.now() };
    await git;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  /** The latest run that changed files (or the given generation's). */
  latest(generation?: string): RunChanges | undefined {
    if (generation) {
      return this.runs.get(generation);
    }
    return [...this.runs.values()].reverse().find((run) => run.files.size > 0);
  }

  /** A followed agent/event. */
  observe(sessionID: string, event: AgentEvent): void {
    switch (event.type) {
      case 'step_start':
        this.begin(sessionID, event.generation);
        return;
      case 'tool_use': {
        const written = event.part.state.metadata?.written;
        if (event.part.state.status !== 'completed' || !Array.isArray(written)) {
          return;
        }
        const run = this.begin(sessionID, event.generation);
        for (const path of written) {
          if (typeof path === 'string') {
            this.add(run, path, event.part.tool === 'write_file' ? 'created' : 'disk');
          }
        }
        this.changed();
        return;
      }
      case 'run_finish': {
        const run = this.begin(sessionID, event.generation);
        for (const path of event.filesChanged) {
          this.add(run, path, 'disk');
        }
        if (event.invalidatedBy?.by === 'command') {
          for (const path of event.invalidatedBy.paths) {
            this.add(run, path, 'command');
          }
        }
        run.finished = true;
        this.changed();
        return;
      }
      default:
        return;
    }
  }

  /** workspace/applyEdit is about to change an open buffer during `generation`: its text now is
   *  the before-text, unless the run already wrote the file another way. */
  beforeApplyEdit(sessionID: string, generation: string, path: string, text: string): void {
    const run = this.begin(sessionID, generation);
    if (!run.files.has(path)) {
      run.files.set(path, { path, origin: 'buffer', bufferText: text, state: 'pending' });
      this.changed();
    }
  }

  setState(run: RunChanges, path: string, state: ChangeState): void {
    const file = run.files.get(path);
    if (file) {
      file.state = state;
      this.changed();
    }
  }

  /** Whether every one of `paths` was reverted by the user in the session's latest run that
   *  changed files (the footer then names the revert as the user's own). */
  allReverted(sessionID: string, paths: readonly string[]): boolean {
    const run = this.latest();
    return run !== undefined && run.sessionID === sessionID && paths.length > 0 && paths.every((p) => run.files.get(p)?.state === 'reverted');
  }

  /** What `file` held before the run. */
  async baseline(run: RunChanges, file: FileChange): Promise<Baseline> {
    switch (file.origin) {
      case 'buffer':
        return { kind: 'text', text: file.bufferText ?? '', source: 'buffer' };
      case 'created':
        return { kind: 'absent', source: 'created' };
      case 'command':
        return { kind: 'unknown', reason: 'changed by a command the agent ran; the editor never saw its text before' };
      case 'disk':
        return this.fromGit(run, file.path);
    }
  }

  private async fromGit(run: RunChanges, path: string): Promise<Baseline> {
    const git = await run.git;
    if (!git || !this.git) {
      return { kind: 'unknown', reason: 'written on disk while not open in the editor, and the workspace is not a git repository' };
    }
    const repoPath = `${git.prefix}${path}`;
    if (git.dirty.has(repoPath)) {
      return { kind: 'unknown', reason: 'it had uncommitted changes when the run started and was not open in the editor' };
    }
    const text = git.head ? await this.git.show(git.head, repoPath) : null;
    if (text !== null) {
      return { kind: 'text', text, source: 'git' };
    }
    if (await this.git.ignored(repoPath)) {
      return { kind: 'unknown', reason: 'git ignores it, so its text before the run is not known' };
    }
    // Not committed, not untracked, not ignored when the run started: it did not exist.
    return { kind: 'absent', source: 'git' };
  }

  private snapshot(): Promise<GitState | undefined> {
    return this.git ? this.git.snapshot().catch(() => undefined) : Promise.resolve(undefined);
  }

  private begin(sessionID: string, generation: string): RunChanges {
    let run = this.runs.get(generation);
    if (run) {
      return run;
    }
    const prepared = this.prepared && this.now() - this.prepared.at <= PREPARED_MS ? this.prepared.git : undefined;
    this.prepared = undefined;
    run = { generation, sessionID, git: prepared ?? this.snapshot(), files: new Map(), finished: false };
    this.runs.set(generation, run);
    while (this.runs.size > this.keep) {
      const oldest = this.runs.keys().next().value;
      if (oldest === undefined) {
        break;
      }
      this.runs.delete(oldest);
    }
    return run;
  }

  private add(run: RunChanges, path: string, origin: FileChange['origin']): void {
    if (!run.files.has(path)) {
      run.files.set(path, { path, origin, state: 'pending' });
    }
  }

  private changed(): void {
    this.listeners.fire();
  }
}

/** The document URIs whose text a workspace/applyEdit changes (text edits only: file creation,
 *  rename and deletion carry no before-text to keep). Accepts both `documentChanges` and `changes`. */
export function editedUris(edit: unknown): string[] {
  const uris: string[] = [];
  const value = edit as { documentChanges?: unknown; changes?: unknown } | null;
  if (value && Array.isArray(value.documentChanges)) {
    for (const change of value.documentChanges as unknown[]) {
      const uri = (change as { textDocument?: { uri?: unknown }; edits?: unknown } | null)?.textDocument?.uri;
      if (typeof uri === 'string' && Array.isArray((change as { edits?: unknown }).edits)) {
        uris.push(uri);
      }
    }
  } else if (value && value.changes && typeof value.changes === 'object') {
    uris.push(...Object.keys(value.changes));
  }
  return [...new Set(uris)];
}
