// The status bar item: idle / running (step k/N) / verified / failed / not_run (status.ts
// decides the words); clicking it opens the transcript.

import * as vscode from 'vscode';

import type { AgentClient } from '../agentClient.js';
import { CommandIds } from '../commands.js';
import { statusFacts, statusView } from '../status.js';
import type { ServerState } from '../status.js';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('lspAgent.status', vscode.StatusBarAlignment.Left, 50);
  /** a Stop button next to the status while a generation runs */
  private readonly stop = vscode.window.createStatusBarItem('lspAgent.stop', vscode.StatusBarAlignment.Left, 49);
  private readonly subscription: { dispose(): void };

  constructor(
    private readonly client: AgentClient,
    private readonly serverState: () => ServerState,
  ) {
    this.item.name = 'LSP Agent';
    this.item.command = CommandIds.showTranscript;
    this.stop.name = 'LSP Agent: Stop';
    this.stop.text = '$(debug-stop) Stop';
    this.stop.tooltip = 'Stop the running task (LSP Agent: Cancel)';
    this.stop.command = CommandIds.cancel;
    this.stop.accessibilityInformation = { label: 'Stop', role: 'button' };
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
    if (state.running) {
      this.stop.show();
    } else {
      this.stop.hide();
    }
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
    this.stop.dispose();
  }
}
