// The transcript view (a webview in the "LSP Agent" panel): the streamed run above, the agent
// input below. The markup comes from transcriptHtml.ts; this file only moves messages between
// the webview and the extension, and keeps the ctrl+s context key in step with focus.

import { randomBytes } from 'node:crypto';

import * as vscode from 'vscode';

import type { AgentClient } from '../agentClient.js';
import type { ApprovalBroker } from '../approvalCards.js';
import { CommandIds, INPUT_FOCUS_CONTEXT } from '../commands.js';
import type { ComposerContext } from '../composer.js';
import type { Composer, Host } from '../host.js';
import { CHOOSE_MODE } from '../modes.js';
import { RUN_PLAN_COMMAND } from '../planRun.js';
import { ReviewCommandIds } from '../review.js';
import { RESTORE_TO_HERE_COMMAND } from '../rewind.js';
import { statusView } from '../status.js';
import type { StatusFacts } from '../status.js';
import { renderApprovals, renderEntries, renderEntry, renderPlanOffer, renderShell, renderWaiting } from '../transcriptHtml.js';
import { runRowAction } from './transcriptActions.js';
import type { RowAction } from './transcriptActions.js';
import type { WaitingView } from '../transcriptHtml.js';

export const TRANSCRIPT_VIEW_ID = 'lspAgent.transcript';

const RENDER_DELAY_MS = 50;
const DRAFT_TIMEOUT_MS = 300;
/** Commands the webview's buttons may run. */
const WEBVIEW_COMMANDS = new Set<string>([
  CommandIds.cancel,
  CommandIds.steerNow,
  CommandIds.showQueue,
  CommandIds.newSession,
  CommandIds.openSession,
  CommandIds.chooseModel,
  CHOOSE_MODE,
  RUN_PLAN_COMMAND,
  CommandIds.sendWaiting,
  CommandIds.withdrawWaiting,
  ReviewCommandIds.review,
  RESTORE_TO_HERE_COMMAND,
]);

type FromWebview =
  | { type: 'ready' }
  | { type: 'draft'; text: string }
  | { type: 'draftReply'; requestId: number; text: string }
  | { type: 'submit'; text: string }
  | { type: 'focus'; focused: boolean }
  | { type: 'approve'; id: number; decision: string }
  | { type: 'command'; id: string; arg?: unknown }
  | RowAction;

export class TranscriptView implements vscode.WebviewViewProvider, Composer, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private lastDraft = '';
  private timer: NodeJS.Timeout | undefined;
  private requestCounter = 0;
  private pendingDrafts = new Map<number, (text: string) => void>();
  private readonly subscriptions: { dispose(): unknown }[] = [];
  /** the webview has no rows yet (new or reloaded): the next render sends every entry */
  private needFull = true;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly client: AgentClient,
    private readonly host: Host,
    private readonly facts: () => StatusFacts,
    private readonly waiting: () => { items: readonly WaitingView[]; reason: string | undefined },
    private readonly onSubmit: (text: string) => Promise<boolean>,
    private readonly approvals: ApprovalBroker,
    /** the composer's `@` context and `/` commands (composer.ts); it also takes Enter's prompt */
    private readonly context?: ComposerContext,
  ) {
    this.subscriptions.push(client.onDidChange(() => this.scheduleRender()));
  }

  /** True while the view is on screen (an approval card is then enough, no notification). */
  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** Bring the view forward with an approval card focused (from the notification's "Show"). */
  async revealApproval(id: number): Promise<void> {
    await vscode.commands.executeCommand(`${TRANSCRIPT_VIEW_ID}.focus`);
    this.render();
    void this.view?.webview.postMessage({ type: 'focusApproval', id });
  }

  /** Something the view draws besides the client's state changed (server, model, waiting prompts). */
  refresh(): void {
    this.scheduleRender();
  }

  private modeLabel: string | undefined;

  /** The mode (Plan, Ask) in the view's header; nothing in Agent mode, the usual one. */
  setModeLabel(label: string | undefined): void {
    this.modeLabel = label;
    if (this.view) {
      this.view.description = label ?? '';
    }
  }

  /** what the composer's two buttons say: the mode runs start in, and the model they use */
  private choices = { mode: 'Agent', model: '' };

  private planOffered = false;

  /** Show (or take away) the "Run It in Agent Mode" button under the plan. */
  setPlanOffer(offered: boolean): void {
    if (offered !== this.planOffered) {
      this.planOffered = offered;
      this.scheduleRender();
    }
  }

  /** The mode and model the composer shows (its buttons open the pickers). */
  setChoices(mode: string, model: string): void {
    if (mode !== this.choices.mode || model !== this.choices.model) {
      this.choices = { mode, model };
      this.scheduleRender();
    }
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.webviewReady = false;
    view.description = this.modeLabel ?? '';
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = renderShell({
      nonce: randomBytes(16).toString('base64'),
      cspSource: view.webview.cspSource,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'transcript.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'transcript.css')).toString(),
      composerScriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'composer.js')).toString(),
      composerStyleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'composer.css')).toString(),
    });
    this.subscriptions.push(
      view.webview.onDidReceiveMessage((message: FromWebview) => this.receive(message)),
      view.onDidChangeVisibility(() => {
        if (!view.visible) {
          void this.host.setContext(INPUT_FOCUS_CONTEXT, false);
        }
      }),
      view.onDidDispose(() => {
        this.view = undefined;
        this.webviewReady = false;
        void this.host.setContext(INPUT_FOCUS_CONTEXT, false);
      }),
    );
  }

  // --- Composer -------------------------------------------------------------------------------

  /** Ask the webview for the text in the input right now (the last reported draft if it does not answer). */
  draft(): Promise<string> {
    const view = this.view;
    if (!view) {
      return Promise.resolve('');
    }
    this.requestCounter += 1;
    const requestId = this.requestCounter;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pendingDrafts.delete(requestId);
        resolve(this.lastDraft);
      }, DRAFT_TIMEOUT_MS);
      this.pendingDrafts.set(requestId, (text) => {
        clearTimeout(timer);
        resolve(text);
      });
      void view.webview.postMessage({ type: 'getDraft', requestId });
    });
  }

  setDraft(text: string): void {
    this.lastDraft = text;
    void this.view?.webview.postMessage({ type: 'setDraft', text });
  }

  clearDraft(): void {
    this.lastDraft = '';
    void this.view?.webview.postMessage({ type: 'clearDraft' });
  }

  /** the webview's script runs and listens (it said 'ready'); a message before that is lost */
  private webviewReady = false;
  /** the cursor was asked into the input before the webview could take it */
  private focusWhenReady = false;

  /** Reveal the view and put the cursor in the agent input. */
  async focusInput(): Promise<void> {
    await vscode.commands.executeCommand(`${TRANSCRIPT_VIEW_ID}.focus`);
    if (this.view && this.webviewReady) {
      void this.view.webview.postMessage({ type: 'focusInput' });
    } else {
      // the view was only now created (the keybinding's first use): its page is still loading
      this.focusWhenReady = true;
    }
  }

  // --- rendering ------------------------------------------------------------------------------

  private scheduleRender(): void {
    if (this.timer) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.render();
    }, RENDER_DELAY_MS);
  }

  private render(): void {
    if (!this.view) {
      return;
    }
    const state = this.client.snapshot;
    const status = statusView(this.facts());
    const waiting = this.waiting();
    const entries = this.client.transcript.entries;
    // Only the rows that changed travel and are redrawn (a long run stays cheap to append to);
    // everything again when rows were dropped, reordered or the webview is new.
    const changes = this.client.transcript.takeChanges();
    const full = this.needFull || changes.structural;
    this.needFull = false;
    const common = {
      // waiting prompts go last, where the next run's output will appear
      approvals: renderApprovals(this.approvals.pending),
      waiting: renderPlanOffer(this.planOffered) + renderWaiting(waiting.items, waiting.reason),
      // codicon syntax ($(name)) means nothing in a webview: keep the words
      status: status.text.replace(/\$\([^)]*\)\s*/g, ''),
      running: state.running,
      session: state.sessionID ?? '',
      choices: this.choices,
    };
    if (full) {
      const html = entries.length === 0 && (waiting.items.length > 0 || this.approvals.pending.length > 0) ? '' : renderEntries(entries);
      void this.view.webview.postMessage({ type: 'render', html, ...common });
      return;
    }
    const rows: { key: string; html: string }[] = [];
    for (const key of changes.keys) {
      const entry = this.client.transcript.entry(key);
      if (entry) {
        rows.push({ key, html: renderEntry(entry) });
      }
    }
    void this.view.webview.postMessage({ type: 'patch', rows, removed: changes.removed, ...common });
  }

  /** A message to the webview (composer.ts answers its `@` queries and updates its chips). */
  post(message: unknown): void {
    void this.view?.webview.postMessage(message);
  }

  private receive(message: FromWebview): void {
    if (this.context?.receive(message, (m) => this.post(m))) {
      return;
    }
    switch (message.type) {
      case 'ready':
        this.webviewReady = true;
        this.needFull = true;
        this.render();
        if (this.focusWhenReady) {
          this.focusWhenReady = false;
          this.post({ type: 'focusInput', unlessMovedOn: true });
        }
        return;
      case 'openFile':
      case 'openOutput':
      case 'copy':
        void runRowAction(message, (key) => this.client.transcript.entry(key));
        return;
      case 'draft':
        this.lastDraft = message.text;
        return;
      case 'draftReply': {
        this.lastDraft = message.text;
        const resolve = this.pendingDrafts.get(message.requestId);
        this.pendingDrafts.delete(message.requestId);
        resolve?.(message.text);
        return;
      }
      case 'submit':
        void this.onSubmit(message.text).then((ok) => {
          if (ok) {
            this.clearDraft();
          }
        });
        return;
      case 'focus':
        void this.host.setContext(INPUT_FOCUS_CONTEXT, message.focused);
        return;
      case 'approve':
        // the broker checks that the question is open and the choice was offered
        this.approvals.answer(message.id, message.decision);
        return;
      case 'command':
        if (WEBVIEW_COMMANDS.has(message.id)) {
          // only a string argument (the generation of a "Review changes" button) is passed on
          const args = typeof message.arg === 'string' && message.arg !== '' ? [message.arg] : [];
          void vscode.commands.executeCommand(message.id, ...args);
        }
        return;
    }
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }
}
