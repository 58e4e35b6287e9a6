// The status bar item: idle / running (step k/N) / verified / failed / not_run (status.ts
// decides the words); clicking it opens the transcript.

import * as vscode from 'vscode';

import type { AgentClient } from '../agentClient.js';
import { CommandIds } from '../commands.js';
import { statusFacts, statusView } from '../status.js';
import type { ServerState } from '../status.js';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('lspAgent.status', vscode.StatusBarAlignment.Left, 50);
  private readonly subscription: { dispose(): void };

  constructor(
    private readonly client: AgentClient,
    private readonly serverState: () => ServerState,
  ) {
    this.item.name = 'LSP Agent';
    this.item.command = CommandIds.showTranscript;
    this.subscription = client.onDidChange(() => this.update());
    this.update();
    this.item.show();
  }

  update(): void {
    const state = this.client.snapshot;
    const view = statusView(statusFacts(this.serverState(), state, this.client.waitingCount));
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.background ? new vscode.ThemeColor(view.background) : undefined;
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
