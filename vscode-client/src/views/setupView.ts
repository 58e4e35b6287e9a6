// The "Get Started" section of the LSP Agent side bar: an empty tree whose welcome content
// (package.json's viewsWelcome, chosen by the lspAgent.setup context key) says what is missing —
// the server or a model — with buttons to the exact setting, the docs and a restart. It is only
// shown while something is missing.

import type * as vscode from 'vscode';

export const SETUP_VIEW_ID = 'lspAgent.setup';

export class SetupView implements vscode.TreeDataProvider<never>, vscode.Disposable {
  getChildren(): never[] {
    return [];
  }

  getTreeItem(element: never): vscode.TreeItem {
    return element;
  }

  dispose(): void {
    // nothing held: the tree is always empty
  }
}
