// agent/requestApproval answered inline: each question becomes a card in the agent view (the
// exact command or diff, why it is asked, and one button per option with what that choice
// covers); a notification with the same choices appears only while the view is hidden. Nothing
// blocks the editor. The request stays open until a button is pressed, the server withdraws it
// (its approvalTimeoutS passed: a deny on its side) or the connection ends. Pure: no `vscode`.

import { DECISION_LABELS, approvalText, optionLabel, parseApproval, scopeOf } from './approval.js';
import type { Decision, RequestApprovalParams, RequestApprovalResult } from './approval.js';
import { Listeners } from './listeners.js';

export interface ApprovalChoice {
  decision: Decision;
  /** the button's words (Allow for session names its scope, cut to fit) */
  label: string;
  /** what this choice covers, in full */
  covers: string;
}

export interface ApprovalCard {
  id: number;
  /** "run run_command", "apply this edit", "call the MCP tool …" */
  subject: string;
  kind: RequestApprovalParams['kind'];
  tool: string;
  /** the exact command (or diff) as the server sent it */
  what: string;
  why: string;
  choices: ApprovalChoice[];
}

/** Where the cards are shown; the extension implements it with the webview and VS Code's notifications. */
export interface ApprovalSurface {
  /** true while the agent view is on screen: the card is enough, no notification */
  viewVisible(): boolean;
  /** a non-modal notification; resolves with the label picked (undefined: closed) */
  notify(message: string, labels: string[]): PromiseLike<string | undefined>;
  /** bring the agent view forward with the card focused */
  reveal(id: number): void;
}

/** The request's cancellation as vscode-jsonrpc hands it to a handler. */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): unknown;
}

export const SHOW_CARD = 'Show in the Agent View';

/** Longest command quoted in the notification; the card has it whole. */
export const NOTIFY_WHAT_CHARS = 160;

function covers(decision: Decision, params: RequestApprovalParams): string {
  switch (decision) {
    case 'allow_once':
      return 'only this call; the next one is asked again';
    case 'allow_session': {
      const scope = scopeOf(params);
      return scope ? `without asking again for the rest of this session: ${scope}` : 'without asking again for the rest of this session';
    }
    case 'deny':
      return 'the call does not run; the agent is told and goes on';
  }
}

export function approvalCard(id: number, params: RequestApprovalParams): ApprovalCard {
  const scope = scopeOf(params);
  return {
    id,
    subject: approvalText(params).message.replace(/^LSP Agent wants to /, ''),
    kind: params.kind,
    tool: params.tool,
    what: params.what,
    why: params.why,
    choices: params.options.map((decision) => ({
      decision,
      // a button label is shown as is in a notification too: no link syntax from the scope
      label: optionLabel(decision, scope).replace(/\]\s*\(/g, '] ('),
      covers: covers(decision, params),
    })),
  };
}

/**
 * The notification's one line: what, cut, with the tool. The command is the model's (and the
 * repository's) text, and VS Code turns `[label](target)` in a notification into a link that can
 * run a command: the pair is broken apart so it stays text.
 */
export function notificationText(card: ApprovalCard): string {
  const flat = card.what.replace(/\s+/g, ' ').trim();
  const what = flat.length > NOTIFY_WHAT_CHARS ? `${flat.slice(0, NOTIFY_WHAT_CHARS - 1)}…` : flat;
  return `LSP Agent wants to ${card.subject}: ${what}`.replace(/\]\s*\(/g, '] (');
}

interface Open {
  card: ApprovalCard;
  resolve: (result: RequestApprovalResult) => void;
}

export class ApprovalBroker {
  private open = new Map<number, Open>();
  private counter = 0;
  private readonly listeners = new Listeners();

  constructor(private readonly surface: ApprovalSurface) {}

  /** The questions waiting for an answer, oldest first. */
  get pending(): ApprovalCard[] {
    return [...this.open.values()].map((o) => o.card);
  }

  /** The handler of agent/requestApproval: malformed params are a deny at once. */
  ask(params: unknown, cancellation?: Cancellation): Promise<RequestApprovalResult> {
    const request = parseApproval(params);
    if (!request || cancellation?.isCancellationRequested) {
      return Promise.resolve({ decision: 'deny' });
    }
    this.counter += 1;
    const card = approvalCard(this.counter, request);
    const answered = new Promise<RequestApprovalResult>((resolve) => this.open.set(card.id, { card, resolve }));
    cancellation?.onCancellationRequested(() => this.settle(card.id, 'deny'));
    this.changed();
    if (!this.surface.viewVisible()) {
      this.notify(card);
    }
    return answered;
  }

  private notify(card: ApprovalCard): void {
    const byLabel = new Map(card.choices.map((c) => [c.label, c.decision] as const));
    Promise.resolve(this.surface.notify(notificationText(card), [...byLabel.keys(), SHOW_CARD])).then(
      (picked) => {
        if (picked === SHOW_CARD) {
          this.surface.reveal(card.id);
          return;
        }
        const decision = picked === undefined ? undefined : byLabel.get(picked);
        // Closing the notification is no answer: the card still asks (the server's timeout denies).
        if (decision) {
          this.answer(card.id, decision);
        }
      },
      () => undefined,
    );
  }

  /** A button on the card (or in the notification); false when the question is no longer open or the choice was not offered. */
  answer(id: number, decision: unknown): boolean {
    const open = this.open.get(id);
    if (!open || !open.card.choices.some((c) => c.decision === decision)) {
      return false;
    }
    return this.settle(id, decision as Decision);
  }

  /** The connection ended: every open question is a deny (the server is gone or denies by itself). */
  denyAll(): void {
    for (const id of [...this.open.keys()]) {
      this.settle(id, 'deny');
    }
  }

  private settle(id: number, decision: Decision): boolean {
    const open = this.open.get(id);
    if (!open) {
      return false;
    }
    this.open.delete(id);
    open.resolve({ decision });
    this.changed();
    return true;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  private changed(): void {
    this.listeners.fire();
  }
}

export { DECISION_LABELS };
