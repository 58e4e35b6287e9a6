// The client's agent logic, free of `vscode`: which session and generation are current, the
// transcript and the queue as the server reports them, and one method per user action, each
// one request to the server. The extension drives it over vscode-languageclient; the protocol
// test drives the very same class over vscode-jsonrpc against the real Python server.

import { randomUUID } from 'node:crypto';

import { Methods, Notifications } from './protocol.js';
import type {
  AgentEvent,
  CancelResult,
  EventParams,
  QueueChangedParams,
  QueueItem,
  QueueSteerResult,
  Receipt,
  ReceiptParams,
  RunFinishEvent,
  FixDiagnosticArgs,
  RunResult,
  SessionInfo,
  SessionResult,
  SkillInfo,
  StatusResult,
  StopReason,
  Verification,
} from './protocol.js';
import { decideSteerNow, isWaiting } from './queueState.js';
import type { SteerNowAction } from './queueState.js';
import { errorFacts } from './rpc.js';
import * as wire from './wire.js';
import type { Disposable, Rpc } from './rpc.js';
import { verificationChange } from './verificationChange.js';
import { Transcript } from './transcript.js';

/** A refusal by the client itself (nothing running, no session): shown as a warning. */
export class UserError extends Error {
  override name = 'UserError';
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const silent: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface ClientState {
  sessionID?: string;
  /** the running generation, if any */
  generation?: string;
  running: boolean;
  step: number;
  maxSteps?: number;
  verification?: Verification;
  stopReason?: StopReason;
  queue: QueueItem[];
}

export type SteerNowOutcome =
  | { kind: 'steered'; receipt: Receipt }
  | { kind: 'ran'; run: RunResult }
  | { kind: 'promoted'; results: QueueSteerResult[] }
  | { kind: 'none'; reason: string };

export interface AgentClientOptions {
  log?: Logger;
  /** clientIDs of corrections: `[A-Za-z0-9_-]{1,100}` */
  newClientID?: () => string;
  /** most transcript entries kept */
  transcriptLimit?: number;
  /** awaited before agent/run is sent (the review of changes records the workspace's git state) */
  beforeRun?: () => Promise<void>;
  /** whether these paths of the session's last run were reverted by the user (Review Changes):
   *  the footer then says "your revert" rather than "a change outside the agent" */
  revertedByUser?: (sessionID: string, paths: readonly string[]) => boolean;
}

/** Pages of agent/session read when a past session is reopened (100 messages each). */
export const SESSION_PAGE_LIMIT = 100;
export const SESSION_MAX_PAGES = 20;

export class AgentClient {
  readonly transcript: Transcript;
  private state: ClientState = { running: false, step: 0, queue: [] };
  private rpc: Rpc | undefined;
  private subscriptions: Disposable[] = [];
  private listeners = new Set<() => void>();
  private readonly log: Logger;
  private readonly newClientID: () => string;
  /** generations whose prompt the transcript already shows */
  private introduced = new Set<string>();
  /** queued rows seen turning `sent`, oldest first: the prompts of generations the server started */
  private freshlySent: QueueItem[] = [];
  private correctionTexts = new Map<string, string>();
  private finished = new Map<string, RunFinishEvent>();
  private knownSkills: SkillInfo[] | undefined;
  private finishWaiters = new Map<string, ((event: RunFinishEvent) => void)[]>();
  private eventListeners = new Set<(sessionID: string, event: AgentEvent) => void>();
  private readonly beforeRun: (() => Promise<void>) | undefined;
  private readonly revertedByUser: AgentClientOptions['revertedByUser'];

  constructor(options: AgentClientOptions = {}) {
    this.log = options.log ?? silent;
    this.beforeRun = options.beforeRun;
    this.revertedByUser = options.revertedByUser;
    this.newClientID = options.newClientID ?? (() => `vscode-${randomUUID()}`);
    this.transcript = new Transcript(options.transcriptLimit);
  }

  // --- connection -----------------------------------------------------------------------------

  /** Listen to a (new) server connection. */
  attach(rpc: Rpc): void {
    this.detach();
    this.rpc = rpc;
    this.subscriptions = [
      rpc.onNotification(Notifications.event, (params) => this.onEvent(params)),
      rpc.onNotification(Notifications.queueChanged, (params) => this.onQueueChanged(params)),
      rpc.onNotification(Notifications.receipt, (params) => this.onReceipt(params)),
      rpc.onNotification(Notifications.skillChanged, (params) => this.onSkillsChanged(params)),
      rpc.onNotification(Notifications.verificationChanged, (params) => this.onVerificationChanged(params)),
    ];
  }

  /** The connection is gone (server stopped or restarting): nothing runs any more. */
  detach(): void {
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.subscriptions = [];
    const wasRunning = this.state.running;
    this.rpc = undefined;
    this.state = { ...this.state, running: false, step: 0 };
    delete this.state.generation;
    if (wasRunning) {
      this.transcript.info('The server stopped; the running generation ended with it.');
      this.changed();
    }
  }

  get connected(): boolean {
    return this.rpc !== undefined;
  }

  get snapshot(): Readonly<ClientState> {
    return this.state;
  }

  onDidChange(listener: () => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Every agent/event of the followed session, after the transcript took it in. */
  onAgentEvent(listener: (sessionID: string, event: AgentEvent) => void): Disposable {
    this.eventListeners.add(listener);
    return { dispose: () => this.eventListeners.delete(listener) };
  }

  private changed(): void {
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch (error) {
        this.log.error(`listener failed: ${String(error)}`);
      }
    }
  }

  /** The skills the agent sees, as the last `agent/skill/changed` said (undefined: not told yet). */
  get skills(): readonly SkillInfo[] | undefined {
    return this.knownSkills;
  }

  /** A request the client has no state for (the skill methods): forwarded as is. */
  send<T>(method: string, params?: unknown): Promise<T> {
    return this.request<T>(method, params);
  }

  private onSkillsChanged(raw: unknown): void {
    const skills = (raw as { skills?: unknown } | undefined)?.skills;
    if (Array.isArray(skills)) {
      this.knownSkills = skills as SkillInfo[];
      this.log.info(`skills changed: ${this.knownSkills.map((s) => s.name).join(', ') || '(none)'}`);
    }
  }

  private async request<T>(method: string, params?: unknown): Promise<T> {
    if (!this.rpc) {
      throw new UserError('The lsp-agent server is not running (see the "LSP Agent" output).');
    }
    return (await this.rpc.sendRequest(method, params)) as T;
  }

  private needSession(): string {
    if (!this.state.sessionID) {
      throw new UserError('No agent session yet: run a task first.');
    }
    return this.state.sessionID;
  }

  private needGeneration(): { sessionID: string; generation: string } {
    const sessionID = this.needSession();
    if (!this.state.running || !this.state.generation) {
      throw new UserError('Nothing is running to steer: run a task, or queue a follow-up.');
    }
    return { sessionID, generation: this.state.generation };
  }

  // --- sessions -------------------------------------------------------------------------------

  /** Continue `sessionID` (a restored one), or start afresh with undefined. */
  useSession(sessionID: string | undefined): void {
    if (sessionID === this.state.sessionID) {
      return;
    }
    this.resetTo(sessionID);
  }

  /** Forget the followed session's state and transcript; follow `sessionID` (none: start afresh). */
  private resetTo(sessionID: string | undefined): void {
    this.state = { running: false, step: 0, queue: [] };
    if (sessionID) {
      this.state.sessionID = sessionID;
    }
    this.transcript.clear();
    this.introduced.clear();
    this.freshlySent = [];
    this.changed();
  }

  /** The workspace's sessions, newest first (agent/sessions). */
  async sessions(limit = 50): Promise<SessionInfo[]> {
    const answer = (await this.request<unknown>(Methods.sessions, { limit })) as { sessions?: unknown } | null;
    if (!answer || !Array.isArray(answer.sessions)) {
      throw new Error('agent/sessions: the answer has no sessions list');
    }
    return answer.sessions as SessionInfo[];
  }

  /** Follow a past session: its stored messages (agent/session, page by page) become the
   *  transcript, then its status and queue are loaded. Refused while a task runs. */
  async openSession(sessionID: string): Promise<{ title: string; messages: number; complete: boolean }> {
    if (this.state.running) {
      throw new UserError('A task is running: cancel it or wait for it to end before you open another session.');
    }
    const pages: SessionResult[] = [];
    let after: string | undefined;
    for (let page = 0; page < SESSION_MAX_PAGES; page += 1) {
      const params: Record<string, unknown> = { sessionID, limit: SESSION_PAGE_LIMIT };
      if (after) {
        params.after = after;
      }
      const answer = (await this.request<unknown>(Methods.session, params)) as SessionResult | null;
      if (!answer || !Array.isArray(answer.messages)) {
        throw new Error('agent/session: the answer has no messages list');
      }
      pages.push(answer);
      after = answer.next ?? undefined;
      if (!after) {
        break;
      }
    }
    this.resetTo(sessionID); // also when it is the current one: the stored history replaces what is shown
    const messages = pages.flatMap((p) => p.messages);
    const title = pages[0]?.title ?? sessionID;
    this.transcript.info(`Session ${sessionID}: ${title}`);
    this.transcript.history(messages);
    const complete = after === undefined;
    if (!complete) {
      this.transcript.info(`Only the first ${messages.length} messages are shown.`);
    }
    for (const message of messages) {
      if (message.generation) {
        this.introduced.add(message.generation);
      }
    }
    this.changed();
    await this.refreshStatus();
    await this.queueList().catch((error: unknown) => this.log.warn(`queue of ${sessionID}: ${String(error)}`));
    return { title, messages: messages.length, complete };
  }

  /** Ask the server about the current session (after a restart or a reload). */
  async refreshStatus(): Promise<StatusResult | undefined> {
    const sessionID = this.state.sessionID;
    if (!sessionID) {
      return undefined;
    }
    let status: StatusResult;
    try {
      status = await this.request<StatusResult>(Methods.status, { sessionID });
    } catch (error) {
      if (errorFacts(error).status === 404) {
        this.log.info(`session ${sessionID} is unknown to this server; starting afresh`);
        this.useSession(undefined);
        return undefined;
      }
      throw error;
    }
    this.state.running = status.state === 'running';
    this.state.step = status.step;
    if (status.generation) {
      this.state.generation = status.generation;
      this.introduced.add(status.generation);
    } else {
      delete this.state.generation;
    }
    if (status.maxSteps) {
      this.state.maxSteps = status.maxSteps;
    }
    if (!this.state.running) {
      this.state.verification = status.verification;
    }
    this.changed();
    return status;
  }

  // --- runs -----------------------------------------------------------------------------------

  async run(prompt: string, options: { maxSteps?: number; model?: string; attachments?: unknown[] } = {}): Promise<RunResult> {
    const text = prompt.trim();
    if (!text) {
      throw new UserError('The task is empty.');
    }
    const { attachments, ...rest } = options;
    const params: Record<string, unknown> = { prompt: text, ...rest };
    if (attachments && attachments.length > 0) {
      params.attachments = attachments;
    }
    if (this.state.sessionID) {
      params.sessionID = this.state.sessionID;
    }
    if (this.beforeRun) {
      try {
        await this.beforeRun();
      } catch (error) {
        this.log.warn(`before the run: ${String(error)}`);
      }
    }
    const result = await this.request<RunResult>(Methods.run, params);
    if (result.sessionID !== this.state.sessionID) {
      this.useSession(result.sessionID);
    }
    this.introduced.add(result.generation);
    // Events can overtake the answer (a fast run may even have finished): the prompt goes
    // before them, and a finished run is not marked running again.
    this.transcript.prompt(withAttached(text, attachments), 'run', result.generation, result.messageID);
    if (!this.finished.has(result.generation)) {
      this.state.running = true;
      this.state.generation = result.generation;
      delete this.state.verification;
      delete this.state.stopReason;
    }
    this.changed();
    return result;
  }

  async cancel(): Promise<CancelResult> {
    const sessionID = this.needSession();
    return this.request<CancelResult>(Methods.cancel, { sessionID });
  }

  /** Resolves with the generation's run_finish event (at once when it already arrived). */
  waitForFinish(generation: string, timeoutMs = 30_000): Promise<RunFinishEvent> {
    const done = this.finished.get(generation);
    if (done) {
      return Promise.resolve(done);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`generation ${generation} did not finish in ${timeoutMs} ms`)), timeoutMs);
      const waiters = this.finishWaiters.get(generation) ?? [];
      waiters.push((event) => {
        clearTimeout(timer);
        resolve(event);
      });
      this.finishWaiters.set(generation, waiters);
    });
  }

  // --- steering -------------------------------------------------------------------------------

  async steer(text: string): Promise<Receipt> {
    const correction = text.trim();
    if (!correction) {
      throw new UserError('The correction is empty.');
    }
    const { sessionID, generation } = this.needGeneration();
    const clientID = this.newClientID();
    this.correctionTexts.set(clientID, correction);
    this.transcript.steer(clientID, correction);
    this.changed();
    try {
      const receipt = wire.receipt(await this.request<unknown>(Methods.steer, {
        sessionID,
        expectedGeneration: generation,
        clientID,
        text: correction,
      }), Methods.steer);
      this.transcript.receipt(receipt);
      return receipt;
    } catch (error) {
      this.transcript.receipt({ status: 'rejected', generation, clientID, reason: 'error', detail: errorFacts(error).message });
      throw error;
    } finally {
      this.changed();
    }
  }

  /** Steer Now (ctrl+s): see queueState.decideSteerNow. */
  async steerNow(draft: string): Promise<SteerNowOutcome> {
    const action: SteerNowAction = decideSteerNow(draft, this.state.running, this.state.queue);
    switch (action.kind) {
      case 'steerDraft':
        return { kind: 'steered', receipt: await this.steer(action.text) };
      case 'runDraft':
        return { kind: 'ran', run: await this.run(action.text) };
      case 'promotePrefix':
        return { kind: 'promoted', results: await this.steerPrefix() };
      case 'none':
        return action;
    }
  }

  async steerPrefix(): Promise<QueueSteerResult[]> {
    const sessionID = this.needSession();
    const results = wire.steerPrefixResult(await this.request<unknown>(Methods.steerPrefix, { sessionID }));
    for (const result of results) {
      this.upsertItem(result.item);
      if (result.receipt) {
        this.transcript.receipt(result.receipt, result.item.text);
      }
      if (result.started) {
        this.adoptStarted(result.started, result.item);
      }
    }
    this.changed();
    return results;
  }

  // --- the queue ------------------------------------------------------------------------------

  /** Queue a follow-up; with no session yet it simply runs. */
  async queueAdd(text: string, attachments: unknown[] = []): Promise<{ item?: QueueItem; run?: RunResult }> {
    const body = text.trim();
    if (!body) {
      throw new UserError('The follow-up is empty.');
    }
    if (!this.state.sessionID) {
      return { run: await this.run(body, { attachments }) };
    }
    const params: Record<string, unknown> = { sessionID: this.state.sessionID, text: body };
    if (attachments.length > 0) {
      params.attachments = attachments;
    }
    const answer = await this.request<unknown>(Methods.queueAdd, params);
    const { item, started } = wire.itemResult(answer, Methods.queueAdd);
    this.upsertItem(item);
    if (started) {
      this.adoptStarted(started, item);
    }
    this.changed();
    return started ? { item, run: started } : { item };
  }

  async queueList(): Promise<QueueItem[]> {
    const sessionID = this.needSession();
    const items = wire.queueItems(await this.request<unknown>(Methods.queueList, { sessionID }));
    if (sessionID === this.state.sessionID) {
      this.replaceQueue(items);
      this.changed();
    }
    return items;
  }

  async queueSteer(taskID: string): Promise<QueueSteerResult> {
    const steer = wire.steerResult(await this.request<unknown>(Methods.queueSteer, { taskID }));
    this.upsertItem(steer.item);
    if (steer.receipt) {
      this.transcript.receipt(steer.receipt, steer.item.text);
    }
    if (steer.started) {
      this.adoptStarted(steer.started, steer.item);
    }
    this.changed();
    return steer;
  }

  async queueSendNow(taskID: string): Promise<QueueItem> {
    return this.itemRequest(Methods.queueSendNow, { taskID });
  }

  async queueCancel(taskID: string): Promise<QueueItem> {
    return this.itemRequest(Methods.queueCancel, { taskID });
  }

  /** Edit a waiting row's text; a row that changed since it was shown is a 409 conflict. */
  async queueEdit(taskID: string, text: string): Promise<QueueItem> {
    const current = this.state.queue.find((i) => i.id === taskID);
    if (!current) {
      throw new UserError('That follow-up is no longer in the queue.');
    }
    return this.itemRequest(Methods.queueEdit, { taskID, text, expectedUpdatedAt: current.updatedAt });
  }

  async compact(): Promise<unknown> {
    const sessionID = this.needSession();
    return this.request<unknown>(Methods.compact, { sessionID });
  }

  private async itemRequest(method: string, params: unknown): Promise<QueueItem> {
    const { item, started } = wire.itemResult(await this.request<unknown>(method, params), method);
    this.upsertItem(item);
    if (started) {
      this.adoptStarted(started, item);
    }
    this.changed();
    return item;
  }

  /** The server started a generation from a queued row (the answer says `started`). */
  private adoptStarted(started: RunResult, item: QueueItem): void {
    this.freshlySent = this.freshlySent.filter((i) => i.id !== item.id);
    if (started.sessionID !== this.state.sessionID || this.introduced.has(started.generation)) {
      return;
    }
    this.introduced.add(started.generation);
    this.transcript.prompt(item.text, 'queue', started.generation, started.messageID);
    if (!this.finished.has(started.generation)) {
      this.state.running = true;
      this.state.generation = started.generation;
    }
  }

  /** New rows from the server; a row we saw waiting that is now `sent` became a generation's prompt. */
  private replaceQueue(items: QueueItem[]): void {
    const before = new Map(this.state.queue.map((i) => [i.id, i]));
    for (const item of items) {
      const previous = before.get(item.id);
      if (item.status === 'sent' && previous && isWaiting(previous)) {
        this.freshlySent.push(item);
      }
    }
    this.state.queue = items;
  }

  private upsertItem(item: QueueItem): void {
    if (item.sessionID && item.sessionID !== this.state.sessionID) {
      return;
    }
    const previous = this.state.queue.find((i) => i.id === item.id);
    if (!previous) {
      this.state.queue = [...this.state.queue, item];
    } else if (previous.updatedAt <= item.updatedAt) {
      if (item.status === 'sent' && isWaiting(previous)) {
        this.freshlySent.push(item);
      }
      this.state.queue = this.state.queue.map((i) => (i.id === item.id ? item : i));
    }
  }

  // --- notifications --------------------------------------------------------------------------

  private onEvent(raw: unknown): void {
    const params = raw as Partial<EventParams> | null;
    const event = params?.event;
    if (!params || !event || typeof event.type !== 'string' || typeof params.sessionID !== 'string') {
      this.log.warn('ignored a malformed agent/event');
      return;
    }
    if (params.sessionID !== this.state.sessionID) {
      if (this.state.running || event.type !== 'step_start') {
        return; // another session's run (another window, or one we do not follow)
      }
      // A run we did not start (e.g. the "Ask the agent to fix this" code action): follow it.
      this.useSession(params.sessionID);
      void this.queueList().catch(() => undefined);
    }
    this.introduce(event);
    this.transcript.apply(event);
    this.track(event);
    for (const listener of [...this.eventListeners]) {
      try {
        listener(params.sessionID, event);
      } catch (error) {
        this.log.error(`event listener failed: ${String(error)}`);
      }
    }
    this.changed();
  }

  /**
   * A run the "Ask the agent to fix this" code action started (VS Code runs the server command
   * itself): follow its session unless another run is shown, and put its prompt line first.
   */
  followStartedRun(result: RunResult, promptLine: string): void {
    if (this.state.running && this.state.sessionID !== result.sessionID) {
      return;
    }
    if (this.state.sessionID !== result.sessionID) {
      this.useSession(result.sessionID);
      void this.queueList().catch(() => undefined);
    }
    if (!this.introduced.has(result.generation)) {
      this.introduced.add(result.generation);
      this.transcript.prompt(promptLine, 'run', result.generation, result.messageID);
    }
    this.changed();
  }

  /** A generation that started without our agent/run (a queued follow-up): show its prompt. */
  private introduce(event: AgentEvent): void {
    if (event.type !== 'step_start' || event.step !== 1 || this.introduced.has(event.generation)) {
      return;
    }
    const sent = this.freshlySent.shift();
    if (sent) {
      // Otherwise the answer that started it (`started`) will bring the prompt.
      this.introduced.add(event.generation);
      this.transcript.prompt(sent.text, 'queue');
    }
  }

  private track(event: AgentEvent): void {
    if (event.type === 'step_start') {
      this.state.running = true;
      this.state.generation = event.generation;
      this.state.step = event.step;
      this.state.maxSteps = event.maxSteps;
      delete this.state.verification;
      delete this.state.stopReason;
    } else if (event.type === 'run_finish') {
      if (this.state.generation === event.generation || !this.state.generation) {
        this.state.running = false;
        this.state.step = 0;
        delete this.state.generation;
      }
      this.state.verification = event.verification;
      this.state.stopReason = event.stopReason;
      this.finished.set(event.generation, event);
      if (this.finished.size > 100) {
        const oldest = this.finished.keys().next().value;
        if (oldest !== undefined) {
          this.finished.delete(oldest);
        }
      }
      for (const resolve of this.finishWaiters.get(event.generation) ?? []) {
        resolve(event);
      }
      this.finishWaiters.delete(event.generation);
    }
  }

  private onQueueChanged(raw: unknown): void {
    const params = raw as Partial<QueueChangedParams> | null;
    if (!params || params.sessionID !== this.state.sessionID) {
      return;
    }
    let items: QueueItem[];
    try {
      items = wire.queueItems(params, Notifications.queueChanged);
    } catch (error) {
      this.log.warn(`ignored agent/queueChanged: ${String(error)}`);
      return;
    }
    this.replaceQueue(items);
    this.changed();
  }

  /** A check went stale after its run (a hand edit, a revert): the footer and the status item follow. */
  private onVerificationChanged(raw: unknown): void {
    const change = verificationChange(raw);
    if (!change) {
      this.log.warn('ignored a malformed agent/verificationChanged');
      return;
    }
    if (change.sessionID !== this.state.sessionID || this.state.running) {
      return;
    }
    this.state.verification = change.verification;
    const paths = change.invalidatedBy?.by === 'outside_process' ? change.invalidatedBy.paths : [];
    const reverted = paths.length > 0 && (this.revertedByUser?.(change.sessionID, paths) ?? false);
    this.transcript.invalidate({ ...change, revertedByUser: reverted });
    this.changed();
  }

  private onReceipt(raw: unknown): void {
    const params = raw as Partial<ReceiptParams> | null;
    const receipt = params?.receipt;
    if (!params || !receipt || params.sessionID !== this.state.sessionID) {
      return;
    }
    const text = this.correctionTexts.get(receipt.clientID) ?? this.queueTextFor(receipt.clientID);
    this.transcript.receipt(receipt, text);
    this.changed();
  }

  /** Queued rows are steered under the clientID `queue_<rowID>`. */
  private queueTextFor(clientID: string): string | undefined {
    if (!clientID.startsWith('queue_')) {
      return undefined;
    }
    return this.state.queue.find((i) => i.id === clientID.slice('queue_'.length))?.text;
  }

  /** Waiting follow-ups (queued or paused). */
  get waitingCount(): number {
    return this.state.queue.filter(isWaiting).length;
  }
}

/** The server command the "Ask the agent to fix this" code action runs. */
export const FIX_DIAGNOSTIC_COMMAND = 'lsp-agent.fixDiagnostic';

/** The transcript's prompt line for a fix run (the server words the model's prompt itself). */
export function fixPromptLine(args: FixDiagnosticArgs, relativePath: string): string {
  return `fix: ${args.kind} failure in ${relativePath} at line ${args.line}: ${args.message}`;
}

/** The prompt as the transcript shows it: what was attached named under it (the model gets them whole). */
export function withAttached(text: string, attachments: readonly unknown[] | undefined): string {
  const names = (attachments ?? []).flatMap((a) => {
    const obj = a as { type?: unknown; path?: unknown; name?: unknown } | null;
    const name = obj?.type === 'file' ? obj.path : obj?.name;
    return typeof name === 'string' ? [name] : [];
  });
  return names.length > 0 ? `${text}\n\nattached: ${names.join(', ')}` : text;
}
