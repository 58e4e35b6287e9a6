// Keeps the `/` list in step with the prompt files on disk: a Markdown file added, changed or deleted
// in the user's prompts directory, or in the workspace's (only while the workspace may offer them),
// refreshes the list without a reload. A burst of events (a save writes, renames, touches) becomes
// one refresh. No `vscode` here: composer.ts hands in the file-system watcher factory.

/** What a file-system watcher gives (vscode.FileSystemWatcher is one). */
export interface PromptWatcher {
  onDidCreate(listener: () => void): unknown;
  onDidChange(listener: () => void): unknown;
  onDidDelete(listener: () => void): unknown;
  dispose(): unknown;
}

/** A watcher on the `*.md` files directly in `dir`. */
export type WatchDir = (dir: string) => PromptWatcher;

/** How long events are gathered into one refresh. */
export const PROMPT_REFRESH_DELAY_MS = 150;

export class PromptWatch {
  private readonly watchers = new Map<string, PromptWatcher>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly watchDir: WatchDir,
    private readonly refresh: () => void,
    private readonly delayMs = PROMPT_REFRESH_DELAY_MS,
  ) {}

  /** The directories watched now, in the order given to `watch`. */
  get watched(): string[] {
    return [...this.watchers.keys()];
  }

  /**
   * Watch exactly these directories: the user's always, the workspace's only when its prompts may
   * be offered (the caller passes undefined otherwise, and a watcher set up before is dropped).
   */
  watch(dirs: readonly (string | undefined)[]): void {
    const wanted = new Set(dirs.filter((d): d is string => d !== undefined));
    for (const [dir, watcher] of this.watchers) {
      if (!wanted.has(dir)) {
        watcher.dispose();
        this.watchers.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (!this.watchers.has(dir)) {
        const watcher = this.watchDir(dir);
        // an event still in flight from a watcher dropped since (trust withdrawn) refreshes nothing
        const changed = (): void => {
          if (this.watchers.get(dir) === watcher) {
            this.schedule();
          }
        };
        watcher.onDidCreate(changed);
        watcher.onDidChange(changed);
        watcher.onDidDelete(changed);
        this.watchers.set(dir, watcher);
      }
    }
  }

  private schedule(): void {
    if (this.timer !== undefined) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refresh();
    }, this.delayMs);
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    for (const watcher of this.watchers.values()) {
      watcher.dispose();
    }
    this.watchers.clear();
  }
}
