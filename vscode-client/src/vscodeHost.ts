// Host (host.ts) implemented with the real `vscode` API. Kept thin on purpose: everything with
// a decision in it lives in modules that take a Host, and those are unit-tested.

import * as vscode from 'vscode';

import type { SelectionFacts } from './corrections.js';
import type { DocumentFacts, Host, InputOptions, PickItem } from './host.js';

const FLASH_MS = 5000;

export class VscodeHost implements Host {
  /** Where notes go once the extension's status bar item exists (one item, not a second status entry). */
  flashTo: ((message: string) => void) | undefined;

  async showInfo(message: string, ...actions: string[]): Promise<string | undefined> {
    return vscode.window.showInformationMessage(message, ...actions);
  }

  async showWarning(message: string, ...actions: string[]): Promise<string | undefined> {
    return vscode.window.showWarningMessage(message, ...actions);
  }

  async showError(message: string, ...actions: string[]): Promise<string | undefined> {
    return vscode.window.showErrorMessage(message, ...actions);
  }

  flash(message: string): void {
    if (this.flashTo) {
      this.flashTo(message);
      return;
    }
    vscode.window.setStatusBarMessage(message, FLASH_MS);
  }

  async inputBox(options: InputOptions): Promise<string | undefined> {
    const box: vscode.InputBoxOptions = { prompt: options.prompt, ignoreFocusOut: true };
    if (options.title !== undefined) {
      box.title = options.title;
    }
    if (options.placeHolder !== undefined) {
      box.placeHolder = options.placeHolder;
    }
    if (options.value !== undefined) {
      box.value = options.value;
    }
    return vscode.window.showInputBox(box);
  }

  async quickPick<T extends PickItem>(items: T[], options: { title?: string; placeHolder?: string }): Promise<T | undefined> {
    const pick: vscode.QuickPickOptions = {};
    if (options.title !== undefined) {
      pick.title = options.title;
    }
    if (options.placeHolder !== undefined) {
      pick.placeHolder = options.placeHolder;
    }
    return vscode.window.showQuickPick(items, pick);
  }

  async setContext(key: string, value: unknown): Promise<void> {
    await vscode.commands.executeCommand('setContext', key, value);
  }

  activeSelection(): SelectionFacts | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      return undefined;
    }
    const { document, selection } = editor;
    const range = selection.isEmpty ? document.lineAt(selection.active.line).range : selection;
    // A selection that ends at column 0 of a line does not include that line.
    const endLine = range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1;
    return {
      path: vscode.workspace.asRelativePath(document.uri, false),
      startLine: range.start.line + 1,
      endLine,
      text: document.getText(range),
      languageId: document.languageId,
    };
  }

  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    return vscode.commands.executeCommand(command, ...args);
  }

  activeDocument(): DocumentFacts | undefined {
    const document = vscode.window.activeTextEditor?.document;
    if (!document) {
      return undefined;
    }
    return { uri: document.uri.toString(), path: vscode.workspace.asRelativePath(document.uri, false) };
  }

  remoteName(): string | undefined {
    return vscode.env.remoteName;
  }

  async pickFile(options: { title: string; openLabel: string }): Promise<string | undefined> {
    const picked = await vscode.window.showOpenDialog({
      title: options.title,
      openLabel: options.openLabel,
      canSelectFiles: true,
      canSelectFolders: false,
      canSelectMany: false,
      filters: { JSON: ['json'], 'All files': ['*'] },
    });
    return picked?.[0]?.toString();
  }
}
