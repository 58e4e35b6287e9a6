// ReviewEditor (review.ts) with the `vscode` API: the before-text as a read-only virtual document
// (scheme `lsp-agent-before`), VS Code's diff editor, and reverts as one WorkspaceEdit each (so
// Undo brings the agent's change back).

import * as vscode from 'vscode';

import type { ReviewEditor } from '../review.js';

export const BEFORE_SCHEME = 'lsp-agent-before';

export class VscodeReviewEditor implements ReviewEditor, vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private counter = 0;
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly registration: vscode.Disposable;

  constructor(private readonly root: () => vscode.Uri | undefined) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.query) ?? '';
  }

  async showDiff(path: string, before: string, title: string): Promise<void> {
    const root = this.need();
    this.counter += 1;
    const key = String(this.counter);
    this.contents.set(key, before);
    const left = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${path}`, query: key });
    const target = vscode.Uri.joinPath(root, path);
    const right = (await this.exists(target)) ? target : vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${path}`, query: 'deleted' });
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
  }

  async restore(path: string, before: string | null): Promise<boolean> {
    const target = vscode.Uri.joinPath(this.need(), path);
    const exists = await this.exists(target);
    const edit = new vscode.WorkspaceEdit();
    if (before === null) {
      if (!exists) {
        return true;
      }
      edit.deleteFile(target, { ignoreIfNotExists: true });
      return vscode.workspace.applyEdit(edit);
    }
    if (!exists) {
      edit.createFile(target, { ignoreIfExists: true });
      edit.insert(target, new vscode.Position(0, 0), before);
      const ok = await vscode.workspace.applyEdit(edit);
      return ok && (await this.save(target));
    }
    const document = await vscode.workspace.openTextDocument(target);
    const end = document.lineAt(document.lineCount - 1).range.end;
    edit.replace(target, new vscode.Range(new vscode.Position(0, 0), end), before);
    const ok = await vscode.workspace.applyEdit(edit);
    // Saved so disk (what the agent and the checks read) matches; Undo in the editor still works.
    return ok && (await this.save(target));
  }

  activePath(): string | undefined {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (input instanceof vscode.TabInputTextDiff && input.original.scheme === BEFORE_SCHEME) {
      return input.original.path.replace(/^\//, '');
    }
    return undefined;
  }

  private async save(uri: vscode.Uri): Promise<boolean> {
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    return document ? document.save() : true;
  }

  private async exists(uri: vscode.Uri): Promise<boolean> {
    try {
      await vscode.workspace.fs.stat(uri);
      return true;
    } catch {
      return false;
    }
  }

  private need(): vscode.Uri {
    const root = this.root();
    if (!root) {
      throw new Error('no workspace folder is open');
    }
    return root;
  }

  dispose(): void {
    this.registration.dispose();
    this.emitter.dispose();
  }
}
