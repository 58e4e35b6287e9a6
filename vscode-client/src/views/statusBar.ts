// The one status bar item of the extension: the agent's state and step, queued and waiting
// prompts, a missing model, the project config being ignored, and a short note after an action
// (status.ts decides the words). Clicking it reveals the agent view; its tooltip links to the
// actions of the moment (stop, choose a model, manage trust).

import * as vscode from 'vscode';

import type { AgentClient } from '../agentClient.js';
import { CommandIds } from '../commands.js';
import type { Readiness, WaitingPrompts } from '../readiness.js';
import { STATUS_LINK_COMMANDS, statusFacts, statusView } from '../status.js';
import type { StatusFacts } from '../status.js';
import { isIgnoring, printable } from '../trustState.js';
import type { WorkspaceTrust } from '../trust.js';

/** How long a note about the last action stays next to the state. */
export const NOTE_MS = 5000;

/** What the status bar and the view's own state line both draw. */
export function currentFacts(
  client: AgentClient,
  readiness: Readiness,
  waiting: WaitingPrompts,
  trust: WorkspaceTrust | undefined,
  note?: string,
): StatusFacts {
  const state = trust?.state;
  const extra: Pick<StatusFacts, 'waiting' | 'noModel' | 'ignored' | 'note'> = {
    waiting: waiting.items.length,
    noModel: readiness.model === 'missing',
    ignored: state && isIgnoring(state) ? state.gated.map((g) => printable(g.effect)) : [],
  };
  if (note) {
    extra.note = note;
  }
  return statusFacts(readiness.server, client.snapshot, client.waitingCount, extra);
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('lspAgent.status', vscode.StatusBarAlignment.Left, 50);
  private readonly subscriptions: { dispose(): void }[];
  private note: string | undefined;
  private noteTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: AgentClient,
    private readonly readiness: Readiness,
    private readonly waiting: WaitingPrompts,
    private readonly trust: WorkspaceTrust,
  ) {
    this.item.name = 'LSP Agent';
    this.item.command = CommandIds.showTranscript;
    this.subscriptions = [
      client.onDidChange(() => this.update()),
      readiness.onDidChange(() => this.update()),
      waiting.onDidChange(() => this.update()),
      trust.onDidChange(() => this.update()),
    ];
    this.update();
    this.item.show();
  }

  /** A note about the last action next to the state for a few seconds (instead of a second status entry). */
  flash(message: string): void {
    this.note = message.replace(/^LSP Agent:\s*/, '');
    clearTimeout(this.noteTimer);
    this.noteTimer = setTimeout(() => {
      this.note = undefined;
      this.update();
    }, NOTE_MS);
    this.update();
  }

  update(): void {
    const view = statusView(currentFacts(this.client, this.readiness, this.waiting, this.trust, this.note));
    this.item.text = view.text;
    const tooltip = new vscode.MarkdownString(view.tooltip, true);
    tooltip.isTrusted = { enabledCommands: [...STATUS_LINK_COMMANDS] };
    this.item.tooltip = tooltip;
    this.item.accessibilityInformation = { label: view.text.replace(/\$\([^)]*\)\s*/g, ''), role: 'button' };
    this.item.backgroundColor = view.background ? new vscode.ThemeColor(view.background) : undefined;
  }

  dispose(): void {
    clearTimeout(this.noteTimer);
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.item.dispose();
  }
}
