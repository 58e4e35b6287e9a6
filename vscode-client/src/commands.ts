// What each "LSP Agent:" command does, over the Host wrapper and the AgentClient, so the
// flows are unit-tested without VS Code. extension.ts only registers these under their IDs.

import { UserError } from './agentClient.js';
import type { AgentClient, Logger } from './agentClient.js';
import { selectionCorrection, lineRange } from './corrections.js';
import type { Composer, Host, PickItem } from './host.js';
import { CONFIG_SECTION, MAX_STEER_CHARS } from './protocol.js';
import type { QueueItem, ReceiptView } from './protocol.js';
import { steerBlocker, waitingItems } from './queueState.js';
import { CHOOSE_MODEL_ACTION, NO_MODEL_MESSAGE, Readiness, WaitingPrompts, isNoModelError, openSettingCommand, waitingReason } from './readiness.js';
import type { SettingScope } from './readiness.js';
import { describeError, errorFacts, isConflict, isMethodNotFound } from './rpc.js';

export const CommandIds = {
  runTask: 'lspAgent.runTask',
  steer: 'lspAgent.steer',
  steerWithSelection: 'lspAgent.steerWithSelection',
  queueFollowUp: 'lspAgent.queueFollowUp',
  steerNow: 'lspAgent.steerNow',
  sendQueuedNow: 'lspAgent.sendQueuedNow',
  cancel: 'lspAgent.cancel',
  showTranscript: 'lspAgent.showTranscript',
  showQueue: 'lspAgent.showQueue',
  compactContext: 'lspAgent.compactContext',
  newSession: 'lspAgent.newSession',
  restartServer: 'lspAgent.restartServer',
  showLog: 'lspAgent.showLog',
  queueSteerItem: 'lspAgent.queue.steerItem',
  queueSendNowItem: 'lspAgent.queue.sendNowItem',
  queueCancelItem: 'lspAgent.queue.cancelItem',
  queueEditItem: 'lspAgent.queue.editItem',
  openSession: 'lspAgent.openSession',
  chooseModel: 'lspAgent.chooseModel',
  openPythonSetting: 'lspAgent.openPythonSetting',
  openDocs: 'lspAgent.openDocs',
  sendWaiting: 'lspAgent.sendWaiting',
  withdrawWaiting: 'lspAgent.withdrawWaiting',
} as const;

/** The transcript view's focus command (VS Code makes one for every view): opens or reveals it. */
export const REVEAL_TRANSCRIPT = 'lspAgent.transcript.focus';

/** The ctrl+s context key: true while the agent input (or the transcript around it) has focus. */
export const INPUT_FOCUS_CONTEXT = 'lspAgent.inputFocused';

/** A queue row argument from a tree view inline action, or a bare ID. */
export type ItemArg = { id: string } | { item: { id: string } } | string | undefined;

export function itemIdOf(arg: ItemArg): string | undefined {
  if (typeof arg === 'string') {
    return arg;
  }
  if (arg && 'item' in arg) {
    return arg.item.id;
  }
  return arg?.id;
}

export function receiptMessage(receipt: ReceiptView): string {
  switch (receipt.status) {
    case 'accepted':
      return 'Correction accepted: it lands at the next step boundary.';
    case 'applied':
      return 'Correction applied to the running task.';
    case 'rejected':
      return `Correction rejected: ${receipt.reason ?? 'no reason given'}${receipt.detail ? ` (${receipt.detail})` : ''}.`;
  }
}

interface QueuePick extends PickItem {
  item: QueueItem;
}

/** How a prompt fared when it was handed to the server. */
type SendOutcome = 'sent' | 'noModel' | 'failed';

export class AgentCommands {
  private flushing = false;

  constructor(
    private readonly host: Host,
    private readonly client: AgentClient,
    private readonly composer: Composer,
    private readonly log: Logger,
    /** the server and model state; the default (a ready server) suits callers that never wait */
    readonly readiness: Readiness = new Readiness('ready'),
    /** prompts typed before the server or the model was there */
    readonly waiting: WaitingPrompts = new WaitingPrompts(),
  ) {}

  /** Runs a command body and turns failures into messages (a command never throws at VS Code). */
  private async guard(what: string, body: () => Promise<void> | void): Promise<void> {
    try {
      await body();
    } catch (error) {
      if (error instanceof UserError) {
        await this.host.showWarning(error.message);
      } else if (isMethodNotFound(error)) {
        await this.host.showWarning(describeError(what, error));
      } else {
        this.log.error(`${what}: ${errorFacts(error).message}`);
        await this.host.showError(describeError(what, error));
      }
    }
  }

  runTask(prompt?: string): Promise<void> {
    return this.guard('Run Task', async () => {
      if (this.client.snapshot.running) {
        const choice = await this.host.showInfo(
          'A task is running. Queue the new one as a follow-up, or steer the running task with it?',
          'Queue Follow-up',
          'Steer',
        );
        if (choice === 'Queue Follow-up') {
          return this.queueFollowUp(prompt);
        }
        if (choice === 'Steer') {
          return this.steer(prompt);
        }
        return;
      }
      const text = prompt ?? (await this.host.inputBox({ title: 'LSP Agent: Run Task', prompt: 'What should the agent do?' }));
      if (text === undefined || text.trim() === '') {
        return;
      }
      // Where the run streams (or the prompt waits): bring the view forward so the user sees it.
      if (this.mustWait()) {
        this.hold(text);
        await this.revealTranscript();
        return;
      }
      const outcome = await this.send(text, 'Run Task');
      if (outcome === 'failed') {
        return; // the error was shown; nothing streams to look at
      }
      if (outcome === 'sent') {
        this.host.flash('LSP Agent: task started');
      } else {
        this.waiting.add(text);
      }
      await this.revealTranscript();
    });
  }

  // --- prompts that wait for the server or the model ------------------------------------------

  /** No server to send to (starting, failed or stopped). */
  private serverDown(): boolean {
    return this.readiness.server !== 'ready';
  }

  /**
   * True while a prompt cannot go now, or earlier ones still wait (they go first, in order). A
   * model believed missing does not hold a prompt back by itself: it may have been set where the
   * client does not look (.lsp-agent/config.toml), so the server is asked and its refusal decides.
   */
  private mustWait(): boolean {
    return this.serverDown() || this.waiting.items.length > 0;
  }

  private hold(text: string, attachments: unknown[] = []): void {
    this.waiting.add(text, attachments);
    const why = waitingReason(this.readiness.setup);
    this.host.flash(`LSP Agent: prompt ${why ?? 'waiting'}`);
    void this.flushWaiting();
  }

  /**
   * Hand one prompt to the server: a new run, or a follow-up while one runs. A refusal for want of
   * a model is not an error shown with the server's CLI text: it is the one message with a button.
   */
  private async send(text: string, what: string, attachments: unknown[] = []): Promise<SendOutcome> {
    let outcome: SendOutcome = 'failed';
    await this.guard(this.client.snapshot.running ? 'Queue Follow-up' : what, async () => {
      try {
        if (this.client.snapshot.running) {
          await this.client.queueAdd(text, attachments);
          this.host.flash('LSP Agent: follow-up queued (Ctrl+S steers it into the running task)');
        } else {
          await this.client.run(text, { attachments });
        }
        outcome = 'sent';
        this.readiness.modelMaybeSet(); // accepted: whatever was said about the model no longer holds
      } catch (error) {
        if (!isNoModelError(error)) {
          throw error;
        }
        outcome = 'noModel';
        this.noModel();
      }
    });
    return outcome;
  }

  /** The server says no model is configured: one message with a button to the setting (once per episode). */
  noModel(): void {
    if (!this.readiness.modelMissing()) {
      return;
    }
    void this.host.showWarning(NO_MODEL_MESSAGE, CHOOSE_MODEL_ACTION).then((choice) => {
      if (choice === CHOOSE_MODEL_ACTION) {
        void this.chooseModel();
      }
    });
  }

  /** Send the waiting prompts in order while the client is ready; a prompt leaves the list only once sent. */
  async flushWaiting(): Promise<void> {
    if (this.flushing) {
      return;
    }
    this.flushing = true;
    try {
      for (;;) {
        const next = this.waiting.items[0];
        if (!next || this.serverDown()) {
          return;
        }
        const outcome = await this.send(next.text, 'Run Task', next.attachments);
        if (outcome !== 'sent') {
          // Kept where the user sees it; a later change (model set, server up) or "Send now" tries again.
          return;
        }
        this.waiting.remove(next.id);
        await this.revealTranscript();
      }
    } finally {
      this.flushing = false;
    }
  }

  /** "Send now" on a waiting prompt: try again (the server decides whether a model is there now). */
  sendWaiting(): Promise<void> {
    return this.flushWaiting();
  }

  /** The × on a waiting prompt: it goes back into the input box, not away. */
  withdrawWaiting(id: unknown): Promise<void> {
    return this.guard('Withdraw Prompt', () => {
      const prompt = this.waiting.items.find((p) => p.id === Number(id));
      if (prompt && this.waiting.remove(prompt.id)) {
        this.composer.setDraft?.(prompt.text);
      }
    });
  }

  // --- the settings a new user needs ----------------------------------------------------------

  /** Open the Settings editor on one lspAgent setting, in the tab where it can be edited. */
  async openSetting(key: string, scope: SettingScope): Promise<void> {
    const full = `${CONFIG_SECTION}.${key}`;
    const { command, args } = openSettingCommand(full, scope, this.host.remoteName?.());
    try {
      await this.host.executeCommand(command, ...args);
    } catch (error) {
      this.log.warn(`${command}: ${String(error)}; opening the User settings instead`);
      await this.host.executeCommand('workbench.action.openSettings', full);
    }
  }

  chooseModel(): Promise<void> {
    return this.openSetting('model', 'window');
  }

  openPythonSetting(): Promise<void> {
    return this.openSetting('python', 'machine-overridable');
  }

  /** The run already started: a view that cannot be shown is logged, not reported as a failed run. */
  private async revealTranscript(): Promise<void> {
    try {
      await this.host.executeCommand(REVEAL_TRANSCRIPT);
    } catch (error) {
      this.log.warn(`could not reveal the transcript: ${String(error)}`);
    }
  }

  /** Reopen a past session's transcript (agent/sessions, then agent/session pages). */
  openSession(): Promise<void> {
    return this.guard('Open Past Session', async () => {
      const sessions = await this.client.sessions();
      if (sessions.length === 0) {
        await this.host.showInfo('LSP Agent: this workspace has no sessions yet.');
        return;
      }
      const current = this.client.snapshot.sessionID;
      const picked = await this.host.quickPick(
        sessions.map((session) => ({
          label: session.title || session.sessionID,
          description: `${new Date(session.updatedAt).toLocaleString()}${session.state === 'running' ? (session.owner ? ` · running in another window or process (pid ${session.owner.pid ?? '?'})` : ' · running') : ''}${session.sessionID === current ? ' · current' : ''}`,
          detail: `${session.sessionID} · ${session.model}`,
          session,
        })),
        { title: 'LSP Agent: Open Past Session', placeHolder: 'Pick a session to show its transcript and continue it' },
      );
      if (!picked) {
        return;
      }
      const opened = await this.client.openSession(picked.session.sessionID);
      await this.revealTranscript();
      this.host.flash(`LSP Agent: reopened "${opened.title}" (${opened.messages} messages); the next task continues it`);
    });
  }

  steer(text?: string): Promise<void> {
    return this.guard('Steer', async () => {
      if (!this.client.snapshot.running) {
        throw new UserError('Nothing is running to steer: run a task, or queue a follow-up.');
      }
      const correction =
        text ??
        (await this.host.inputBox({
          title: 'LSP Agent: Steer Running Task',
          prompt: 'A correction for the running task (lands at the next step boundary)',
        }));
      if (correction === undefined || correction.trim() === '') {
        return;
      }
      const receipt = await this.client.steer(correction);
      this.reportReceipt(receipt);
    });
  }

  steerWithSelection(): Promise<void> {
    return this.guard('Steer With Selection', async () => {
      if (!this.client.snapshot.running) {
        throw new UserError('Nothing is running to steer: run a task first.');
      }
      const selection = this.host.activeSelection();
      if (!selection) {
        throw new UserError('Open a file and select the code the correction is about.');
      }
      const note = await this.host.inputBox({
        title: `LSP Agent: Steer With Selection (${selection.path}, ${lineRange(selection)})`,
        prompt: 'What should the agent do about the selected code? (empty: just look at it)',
      });
      if (note === undefined) {
        return;
      }
      const receipt = await this.client.steer(selectionCorrection(selection, note, MAX_STEER_CHARS));
      this.reportReceipt(receipt);
    });
  }

  queueFollowUp(text?: string): Promise<void> {
    return this.guard('Queue Follow-up', async () => {
      const body =
        text ??
        (await this.host.inputBox({
          title: 'LSP Agent: Queue Follow-up',
          prompt: 'A follow-up: it runs when the current task ends (or now, when nothing runs)',
        }));
      if (body === undefined || body.trim() === '') {
        return;
      }
      const result = await this.client.queueAdd(body);
      this.host.flash(result.run ? 'LSP Agent: nothing was running, so the follow-up started now' : 'LSP Agent: follow-up queued');
    });
  }

  /**
   * Enter in the agent input: run the text, or queue it while a task runs. With no server or no
   * model yet it waits, shown in the transcript, and runs when ready; true: the input may be
   * cleared (the text is sent or waiting), false: it stays in the input (an error was shown).
   */
  async submit(text: string, attachments: unknown[] = []): Promise<boolean> {
    if (text.trim() === '') {
      return false;
    }
    if (this.mustWait()) {
      this.hold(text, attachments);
      return true;
    }
    const outcome = await this.send(text, 'Run Task', attachments);
    if (outcome === 'noModel') {
      this.waiting.add(text, attachments);
    }
    return outcome !== 'failed';
  }

  /** Ctrl+S: steer the draft, or promote the queue's steerable prefix. */
  steerNow(): Promise<void> {
    return this.guard('Steer Now', async () => {
      const draft = await this.composer.draft();
      const outcome = await this.client.steerNow(draft);
      switch (outcome.kind) {
        case 'steered':
          this.composer.clearDraft();
          this.reportReceipt(outcome.receipt);
          return;
        case 'ran':
          this.composer.clearDraft();
          this.host.flash('LSP Agent: nothing was running, so the draft started a new task');
          return;
        case 'promoted': {
          const steered = outcome.results.filter((r) => r.receipt && r.receipt.status !== 'rejected').length;
          const moved = outcome.results.filter((r) => !r.receipt && r.reason === 'generation_not_active').length;
          const rejected = outcome.results.filter((r) => r.receipt?.status === 'rejected');
          const parts: string[] = [];
          if (steered) {
            parts.push(`${steered} queued follow-up${steered === 1 ? '' : 's'} steered into the running task`);
          }
          if (moved) {
            parts.push('the task had ended, so the first follow-up was sent instead');
          }
          if (rejected.length) {
            parts.push(`rejected: ${rejected.map((r) => r.receipt?.reason ?? r.reason ?? 'unknown').join(', ')}`);
          }
          this.host.flash(`LSP Agent: ${parts.join('; ') || 'nothing was steered'}`);
          return;
        }
        case 'none':
          await this.host.showInfo(outcome.reason);
          return;
      }
    });
  }

  sendQueuedNow(arg?: ItemArg): Promise<void> {
    return this.guard('Send Queued Now', async () => {
      const id = itemIdOf(arg) ?? (await this.pickWaiting('Send which follow-up now?'))?.id;
      if (!id) {
        return;
      }
      await this.client.queueSendNow(id);
      this.host.flash(
        this.client.snapshot.running
          ? 'LSP Agent: moved to the front; it runs when the current task ends'
          : 'LSP Agent: follow-up sent',
      );
    });
  }

  queueSteerItem(arg?: ItemArg): Promise<void> {
    return this.guard('Steer Queued Follow-up', async () => {
      const id = itemIdOf(arg) ?? (await this.pickWaiting('Steer which follow-up into the running task?'))?.id;
      if (!id) {
        return;
      }
      const result = await this.client.queueSteer(id);
      if (result.receipt) {
        this.reportReceipt(result.receipt);
      } else if (result.reason === 'generation_not_active') {
        const choice = await this.host.showInfo('Nothing is running to steer into. Send this follow-up now instead?', 'Send Now');
        if (choice === 'Send Now') {
          await this.client.queueSendNow(id);
        }
      } else {
        await this.host.showWarning(`Not steered: ${result.reason ?? 'no reason given'}`);
      }
    });
  }

  queueCancelItem(arg?: ItemArg): Promise<void> {
    return this.guard('Cancel Queued Follow-up', async () => {
      const id = itemIdOf(arg) ?? (await this.pickWaiting('Cancel which follow-up?'))?.id;
      if (!id) {
        return;
      }
      await this.client.queueCancel(id);
    });
  }

  queueEditItem(arg?: ItemArg): Promise<void> {
    return this.guard('Edit Queued Follow-up', async () => {
      const id = itemIdOf(arg) ?? (await this.pickWaiting('Edit which follow-up?'))?.id;
      const item = this.client.snapshot.queue.find((i) => i.id === id);
      if (!id || !item) {
        return;
      }
      const text = await this.host.inputBox({ title: 'LSP Agent: Edit Follow-up', prompt: 'The follow-up text', value: item.text });
      if (text === undefined || text.trim() === '' || text === item.text) {
        return;
      }
      try {
        await this.client.queueEdit(id, text);
      } catch (error) {
        if (isConflict(error)) {
          await this.client.queueList().catch(() => undefined);
          throw new UserError('The follow-up changed meanwhile (sent, steered or edited elsewhere); the queue is refreshed.');
        }
        throw error;
      }
    });
  }

  cancel(): Promise<void> {
    return this.guard('Cancel', async () => {
      const result = await this.client.cancel();
      this.host.flash(result.cancelled ? 'LSP Agent: cancelling…' : 'LSP Agent: nothing was running');
    });
  }

  compactContext(): Promise<void> {
    return this.guard('Compact Context', async () => {
      const result = await this.client.compact();
      const obj = typeof result === 'object' && result !== null ? (result as Record<string, unknown>) : {};
      const said = [obj.message, obj.summary, obj.status].find((v): v is string => typeof v === 'string');
      await this.host.showInfo(`Context compacted${said ? `: ${said}` : '.'}`);
    });
  }

  newSession(): Promise<void> {
    return this.guard('New Session', () => {
      if (this.client.snapshot.running) {
        throw new UserError('A task is running: cancel it before starting a new session.');
      }
      this.client.useSession(undefined);
      this.host.flash('LSP Agent: the next task starts a new session');
    });
  }

  private reportReceipt(receipt: ReceiptView): void {
    if (receipt.status === 'rejected') {
      void this.host.showWarning(receiptMessage(receipt));
    } else {
      this.host.flash(`LSP Agent: ${receiptMessage(receipt)}`);
    }
  }

  private async pickWaiting(placeHolder: string): Promise<QueueItem | undefined> {
    const waiting = waitingItems(this.client.snapshot.queue);
    if (waiting.length === 0) {
      throw new UserError('The queue is empty.');
    }
    const picks: QueuePick[] = waiting.map((item, index) => {
      const blocker = steerBlocker(item);
      const pick: QueuePick = { label: item.text.split('\n')[0] ?? item.text, description: `#${index + 1} · ${item.status}`, item };
      if (blocker) {
        pick.detail = `cannot be steered: ${blocker}`;
      }
      return pick;
    });
    return (await this.host.quickPick(picks, { title: 'LSP Agent: Queue', placeHolder }))?.item;
  }
}
