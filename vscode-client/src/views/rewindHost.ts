// The VS Code side of "Restore to here" and /rewind: QuickPicks, modals, and the dry run's diff in
// a read-only document. The flow itself is rewind.ts.

import * as vscode from 'vscode';

import type { Host, PickItem } from '../host.js';
import type { RestoreWhat, RewindUi } from '../rewind.js';

const PREVIEW_SCHEME = 'lsp-agent-rewind';
const KEEP_MINE = 'Keep My Changes';
const RESTORE_TOO = 'Restore Them Too';
const GO_ON: Record<string, RestoreWhat> = { 'Restore Code': 'code', 'Restore Code and Conversation': 'both' };

/** The previews shown: virtual, read-only documents (nothing to save when they are closed). */
const previews = new Map<string, string>();
let previewProvider: vscode.Disposable | undefined;
let previewCounter = 0;
const KEPT_PREVIEWS = 5;

export class VscodeRewindUi implements RewindUi {
  constructor(private readonly host: Host) {}

  pick<T extends PickItem>(items: T[], options: { title: string; placeHolder: string }): Promise<T | undefined> {
    return this.host.quickPick(items, options);
  }

  async showDiff(diff: string): Promise<void> {
    previewProvider ??= vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, {
      provideTextDocumentContent: (uri) => previews.get(uri.query) ?? '',
    });
    previewCounter += 1;
    const key = String(previewCounter);
    previews.set(key, diff);
    for (const old of [...previews.keys()].slice(0, Math.max(0, previews.size - KEPT_PREVIEWS))) {
      previews.delete(old);
    }
    const document = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: '/Restore preview.diff', query: key }));
    await vscode.languages.setTextDocumentLanguage(document, 'diff');
    await vscode.window.showTextDocument(document, { preview: true });
  }

  async confirmAfterPreview(files: number): Promise<RestoreWhat | undefined> {
    const answer = await vscode.window.showInformationMessage(
      `Restore ${files === 1 ? '1 file' : `${files} files`} as the preview shows?`,
      { modal: true, detail: 'Open editors change in place (Undo in the editor takes it back); other files on disk. An Undo button follows.' },
      ...Object.keys(GO_ON),
    );
    return answer === undefined ? undefined : GO_ON[answer];
  }

  async askConflicts(files: readonly string[]): Promise<boolean | undefined> {
    const answer = await vscode.window.showWarningMessage(
      `${files.length === 1 ? 'A file was' : `${files.length} files were`} changed outside the agent since then: ${files.join(', ')}`,
      { modal: true, detail: `${KEEP_MINE} restores everything else and leaves these as they are now.` },
      KEEP_MINE,
      RESTORE_TOO,
    );
    return answer === undefined ? undefined : answer === RESTORE_TOO;
  }

  async saveEditors(paths: readonly string[]): Promise<string[]> {
    const root = vscode.workspace.workspaceFolders?.[0]?.uri;
    const unsaved: string[] = [];
    for (const rel of paths) {
      const uri = root ? vscode.Uri.joinPath(root, rel) : undefined;
      const document = uri ? vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString()) : undefined;
      if (document?.isDirty && !(await document.save())) {
        unsaved.push(rel);
      }
    }
    return unsaved;
  }

  info(message: string, ...actions: string[]): Promise<string | undefined> {
    return this.host.showInfo(`LSP Agent: ${message}`, ...actions);
  }

  async warn(message: string): Promise<void> {
    await this.host.showWarning(`LSP Agent: ${message}`);
  }

  async error(message: string): Promise<void> {
    await this.host.showError(message);
  }
}
