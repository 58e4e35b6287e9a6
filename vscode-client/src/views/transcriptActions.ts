// What the transcript's links and buttons do in VS Code: open a workspace file at a line (or where
// an edit's text landed), open a tool's whole output in an editor, copy a row's arguments, output
// or diff. The webview only names a row and a part; the text comes from the extension's own
// transcript, and a file link goes through resolveLinkPath (workspace files only).

import * as vscode from 'vscode';

import { copyText } from '../toolDetail.js';
import type { Entry } from '../transcript.js';
import { LINK_REFUSAL_TEXT, resolveLinkPath } from '../workspacePath.js';

export type RowAction =
  // from the webview: typed as what it should send, checked as what it may send
  | { type: 'openFile'; path: unknown; line?: unknown; find?: unknown }
  | { type: 'openOutput'; key: unknown }
  | { type: 'copy'; key: unknown; what: unknown };

export async function runRowAction(action: RowAction, lookup: (key: string) => Entry | undefined): Promise<void> {
  switch (action.type) {
    case 'openFile':
      return typeof action.path === 'string' ? openFile(action.path, action.line, action.find) : undefined;
    case 'openOutput': {
      const entry = typeof action.key === 'string' ? lookup(action.key) : undefined;
      if (entry?.kind === 'tool' && entry.output != null) {
        await showOutput(entry.tool, entry.output);
      }
      return;
    }
    case 'copy': {
      const text = typeof action.key === 'string' && typeof action.what === 'string' ? copyText(lookup(action.key), action.what) : undefined;
      if (text !== undefined) {
        await vscode.env.clipboard.writeText(text);
        vscode.window.setStatusBarMessage('LSP Agent: copied', 2000);
      }
      return;
    }
  }
}

/** Outputs opened in an editor: read-only virtual documents (nothing in them runs, nothing is
 *  written to the workspace, and closing one asks nothing). */
const OUTPUT_SCHEME = 'lsp-agent-output';
const outputs = new Map<string, string>();
let outputProvider: vscode.Disposable | undefined;
let outputCounter = 0;
/** outputs kept for their editors; an older one shows empty if VS Code asks for it again */
const KEPT_OUTPUTS = 20;

async function showOutput(tool: string, text: string): Promise<void> {
  outputProvider ??= vscode.workspace.registerTextDocumentContentProvider(OUTPUT_SCHEME, {
    provideTextDocumentContent: (uri) => outputs.get(uri.query) ?? '',
  });
  outputCounter += 1;
  const key = String(outputCounter);
  outputs.set(key, text);
  if (outputs.size > KEPT_OUTPUTS) {
    const oldest = outputs.keys().next().value;
    if (oldest !== undefined) {
      outputs.delete(oldest);
    }
  }
  // the name is a label only: the tool's name, never a path from the output
  const uri = vscode.Uri.from({ scheme: OUTPUT_SCHEME, path: `/${tool.replace(/[^A-Za-z0-9_-]/g, '_')} output.txt`, query: key });
  const document = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(document, { preview: true });
}

async function openFile(rel: string, line: unknown, find: unknown): Promise<void> {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!root || root.scheme !== 'file') {
    return;
  }
  const target = resolveLinkPath(root.fsPath, rel);
  if (!target.ok) {
    void vscode.window.showWarningMessage(`LSP Agent: not opened: ${LINK_REFUSAL_TEXT[target.reason]}.`);
    return;
  }
  const document = await vscode.workspace.openTextDocument(vscode.Uri.file(target.file));
  let at = typeof line === 'number' && Number.isInteger(line) && line > 0 ? line - 1 : undefined;
  if (at === undefined && typeof find === 'string' && find.trim() !== '') {
    const offset = document.getText().indexOf(find);
    if (offset >= 0) {
      at = document.positionAt(offset).line;
    }
  }
  const position = new vscode.Position(Math.min(at ?? 0, Math.max(0, document.lineCount - 1)), 0);
  await vscode.window.showTextDocument(document, { selection: new vscode.Range(position, position), preview: true });
}
