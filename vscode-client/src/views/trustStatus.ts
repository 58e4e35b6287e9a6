// A status bar item shown only while the server ignores the workspace's own configuration
// (untrusted, or changed since it was trusted): the user sees that the project config is off and
// can open "Manage Workspace Trust" from it. Restricted Mode says so too.

import * as vscode from 'vscode';

import { TRUST_COMMAND, isIgnoring } from '../trust.js';
import type { WorkspaceTrust } from '../trust.js';

export class TrustStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('lspAgent.trust', vscode.StatusBarAlignment.Left, 48);
  private readonly subscription: { dispose(): void };

  constructor(private readonly trust: WorkspaceTrust) {
    this.item.name = 'LSP Agent: Workspace Trust';
    this.item.command = TRUST_COMMAND;
    this.subscription = trust.onDidChange(() => this.update());
    this.update();
  }

  update(): void {
    const state = this.trust.state;
    if (!state || !isIgnoring(state)) {
      this.item.hide();
      return;
    }
    const restricted = !vscode.workspace.isTrusted;
    this.item.text = '$(shield) Agent: project config ignored';
    this.item.tooltip =
      `${restricted ? 'Restricted Mode: ' : ''}this workspace's own lsp-agent configuration is ignored until you trust it:\n` +
      `${state.gated.map((g) => `• ${g.effect}`).join('\n')}\n\nClick to manage workspace trust.`;
    this.item.show();
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
