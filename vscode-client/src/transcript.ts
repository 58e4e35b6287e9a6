// The transcript model: streamed agent/event notifications (plus the user's prompts and
// corrections) folded into a list of entries a view can draw. Pure: no `vscode`, no I/O.

import type {
  AgentEvent,
  ErrorInfo,
  InvalidatedBy,
  MessageOut,
  ReceiptView,
  ReceiptStatus,
  StopReason,
  Tokens,
  ToolPartInfo,
  Verification,
} from './protocol.js';
import { keepOutput, toolDetail } from './toolDetail.js';
import type { ToolDetail } from './toolDetail.js';

export interface PromptEntry {
  kind: 'prompt';
  key: string;
  text: string;
  source: 'run' | 'queue';
  /** the stored user message (what "Restore to here" rewinds to), once the server named it */
  messageID?: string;
}

export interface StepEntry {
  kind: 'step';
  key: string;
  generation: string;
  step: number;
  maxSteps: number;
  tokens?: Tokens;
  reason?: 'tool-calls' | 'stop' | 'length';
  /** the step's assistant message, known once it made a call ("Restore to here": before its effects) */
  messageID?: string;
}

export interface TextEntry {
  kind: 'text' | 'reasoning';
  key: string;
  generation: string;
  text: string;
  /** false while deltas still stream in */
  final: boolean;
}

export interface ToolEntry {
  kind: 'tool';
  key: string;
  generation: string;
  step: number;
  tool: string;
  input: string;
  status: 'running' | 'completed' | 'error';
  /** the assistant message that made the call */
  messageID?: string;
  summary?: string;
  errorKind?: string;
  elapsedMs?: number;
  /** the raw arguments (for the expanded row; `input` is their one-line form) */
  rawInput?: Record<string, unknown> | string;
  /** the whole output (head and tail when it was huge) */
  output?: string;
  /** arguments, diffs and check results drawn when the row is expanded */
  detail?: ToolDetail;
}

/** The end of a replayed run: the store keeps no run_finish, so it is told from the messages. */
export interface StopEntry {
  kind: 'stop';
  key: string;
  generation: string;
  steps: number;
  toolCalls: number;
  toolErrors: number;
  /** 'final' when the last reply had no calls, 'interrupted' when a call has no stored result */
  ended: 'final' | 'interrupted' | 'tools';
  lastCheck?: 'passed' | 'failed' | 'error';
}

export interface NoticeEntry {
  kind: 'notice';
  key: string;
  noticeKind: string;
  message: string;
}

export interface ErrorEntry {
  kind: 'error';
  key: string;
  errorKind: string;
  message: string;
}

export interface SteerEntry {
  kind: 'steer';
  key: string;
  clientID: string;
  text: string;
  status: ReceiptStatus | 'sending';
  reason?: string;
  detail?: string;
}

export interface FinishEntry {
  kind: 'finish';
  key: string;
  generation: string;
  stopReason: StopReason;
  verification: Verification;
  steps: number;
  toolCalls: number;
  toolErrors: number;
  tokens: Tokens;
  filesChanged: string[];
  model: string;
  scripted: boolean;
  error?: ErrorInfo;
  /** why the status is `not_run` although a check had passed (the server's words) */
  verificationReason?: string;
  invalidatedBy?: InvalidatedBy;
  handoffTo?: string;
  /** set when a write after the run made its check stale (the server said so later) */
  invalidatedLater?: boolean;
  /** the stale-making change was the user's own revert of these files (Review Changes) */
  revertedByUser?: boolean;
  /** how the run's last verify_project call ended, as the rows show it */
  lastCheck?: 'passed' | 'failed' | 'error' | 'denied' | 'cancelled';
}

export interface InfoEntry {
  kind: 'info';
  key: string;
  message: string;
}

export type Entry =
  | PromptEntry
  | StepEntry
  | TextEntry
  | ToolEntry
  | NoticeEntry
  | ErrorEntry
  | SteerEntry
  | FinishEntry
  | StopEntry
  | InfoEntry;

/** What changed since the view last drew: the keys of changed or new entries, and whether
 *  entries were dropped, reordered or cleared (then the view draws everything again). */
export interface TranscriptChanges {
  keys: Set<string>;
  /** rows that dropped off the top (past the limit): the view removes them */
  removed: string[];
  structural: boolean;
}

const SUMMARY_CHARS = 200;
const INPUT_CHARS = 120;

/** The first non-empty line, cut to `limit` characters. */
export function firstLine(text: string | null | undefined, limit = SUMMARY_CHARS): string {
  const line = (text ?? '').split('\n').find((l) => l.trim() !== '') ?? '';
  const trimmed = line.trim();
  return trimmed.length > limit ? `${trimmed.slice(0, limit - 1)}…` : trimmed;
}

/** A one-line view of a tool call's arguments: the path or command when there is one. */
export function describeInput(input: Record<string, unknown> | string): string {
  if (typeof input === 'string') {
    return firstLine(input, INPUT_CHARS);
  }
  for (const key of ['path', 'command', 'pattern', 'query', 'name']) {
    const value = input[key];
    if (typeof value === 'string' && value !== '') {
      return firstLine(value, INPUT_CHARS);
    }
  }
  const argv = input.argv;
  if (Array.isArray(argv)) {
    return firstLine(argv.map(String).join(' '), INPUT_CHARS);
  }
  const json = JSON.stringify(input);
  return json === '{}' ? '' : firstLine(json, INPUT_CHARS);
}

export function formatTokens(tokens: Tokens): string {
  if (tokens.unknown && !tokens.input && !tokens.output) {
    return 'tokens unknown (the server reported no usage)';
  }
  const parts = [`in ${tokens.input.toLocaleString('en-US')}`, `out ${tokens.output.toLocaleString('en-US')}`];
  if (tokens.reasoning) {
    parts.push(`reasoning ${tokens.reasoning.toLocaleString('en-US')}`);
  }
  const cached = tokens.cache?.read ?? 0;
  if (cached) {
    parts.push(`cached ${cached.toLocaleString('en-US')}`);
  }
  return `${parts.join(' · ')} tokens${tokens.unknown ? ' (incomplete: some replies had no usage)' : ''}`;
}

export class Transcript {
  private list: Entry[] = [];
  private byKey = new Map<string, Entry>();
  private counter = 0;
  private dirty = new Set<string>();
  private removed: string[] = [];
  private structural = true;

  /** Entries beyond `limit` drop off the top (the server keeps the full history); a step makes
   *  about three entries, so the default keeps the last ~3,000 steps. */
  constructor(private readonly limit = 10_000) {}

  get entries(): readonly Entry[] {
    return this.list;
  }

  clear(): void {
    this.list = [];
    this.byKey.clear();
    this.structural = true;
  }

  /** The changes since the last call (the view appends or replaces only those rows). */
  takeChanges(): TranscriptChanges {
    const changes = { keys: this.dirty, removed: this.structural ? [] : this.removed, structural: this.structural };
    this.dirty = new Set();
    this.removed = [];
    this.structural = false;
    return changes;
  }

  /** Look up an entry by key (the view's "open in editor" and copy buttons). */
  entry(key: string): Entry | undefined {
    return this.byKey.get(key);
  }

  /** A write after the run made its check stale: the latest finished run of the session says so. */
  invalidate(change: {
    verification: Verification;
    verificationReason?: string | null;
    invalidatedBy?: InvalidatedBy | null;
    revertedByUser?: boolean;
  }): boolean {
    const finish = [...this.list].reverse().find((e): e is FinishEntry => e.kind === 'finish');
    if (!finish) {
      return false;
    }
    if (finish.verification === change.verification && !change.invalidatedBy) {
      return false;
    }
    finish.verification = change.verification;
    if (change.verificationReason) {
      finish.verificationReason = change.verificationReason;
    }
    if (change.invalidatedBy) {
      finish.invalidatedBy = change.invalidatedBy;
    }
    finish.invalidatedLater = true;
    if (change.revertedByUser) {
      finish.revertedByUser = true;
    }
    this.dirty.add(finish.key);
    return true;
  }

  info(message: string): void {
    this.push({ kind: 'info', key: this.fresh('info'), message });
  }

  /** A user prompt; given its generation, it goes before that generation's entries already shown. */
  prompt(text: string, source: PromptEntry['source'] = 'run', generation?: string, messageID?: string): void {
    const entry: PromptEntry = { kind: 'prompt', key: this.fresh('prompt'), text, source };
    if (messageID) {
      entry.messageID = messageID;
    }
    const first = generation === undefined ? -1 : this.list.findIndex((e) => 'generation' in e && e.generation === generation);
    if (first < 0) {
      this.push(entry);
      return;
    }
    this.list.splice(first, 0, entry);
    this.byKey.set(entry.key, entry);
    this.structural = true;
  }

  /** A correction the user sent; its receipt updates the same entry later. */
  steer(clientID: string, text: string, receipt?: ReceiptView): void {
    const key = `steer:${clientID}`;
    if (!this.byKey.has(key)) {
      this.push({ kind: 'steer', key, clientID, text, status: 'sending' });
    }
    if (receipt) {
      this.receipt(receipt);
    }
  }

  /** A receipt (from the steer answer or an agent/receipt notification). */
  receipt(receipt: ReceiptView, text?: string): void {
    const key = `steer:${receipt.clientID}`;
    let entry = this.byKey.get(key) as SteerEntry | undefined;
    if (!entry) {
      // A correction from another client, or a queued row steered by the server.
      entry = { kind: 'steer', key, clientID: receipt.clientID, text: text ?? '', status: receipt.status };
      this.push(entry);
    }
    if (entry.status === 'sending' || rank(receipt.status) >= rank(entry.status)) {
      entry.status = receipt.status;
      if (receipt.reason) {
        entry.reason = receipt.reason;
      }
      if (receipt.detail) {
        entry.detail = receipt.detail;
      }
    }
    if (text && !entry.text) {
      entry.text = text;
    }
    this.dirty.add(key);
  }

  apply(event: AgentEvent): void {
    switch (event.type) {
      case 'step_start':
        this.upsertStep(event.generation, event.step, event.maxSteps);
        return;
      case 'text_delta':
      case 'reasoning_delta': {
        const kind = event.type === 'text_delta' ? 'text' : 'reasoning';
        const key = `${kind}:${event.partID}`;
        const entry = this.byKey.get(key) as TextEntry | undefined;
        if (entry) {
          entry.text += event.delta;
          this.dirty.add(key);
        } else {
          this.push({ kind, key, generation: event.generation, text: event.delta, final: false });
        }
        return;
      }
      case 'text':
      case 'reasoning':
        this.finishText(event.type, event.generation, event.part.id, event.part.text);
        return;
      case 'tool_start':
      case 'tool_use':
        this.upsertTool(event.generation, event.step, event.part);
        return;
      case 'step_finish': {
        const step = this.upsertStep(event.generation, event.part.step, 0);
        step.tokens = event.part.tokens;
        step.reason = event.part.reason;
        this.dirty.add(step.key);
        return;
      }
      case 'notice':
        this.push({ kind: 'notice', key: this.fresh('notice'), noticeKind: event.kind, message: event.message });
        return;
      case 'error':
        this.push({ kind: 'error', key: this.fresh('error'), errorKind: event.error.kind, message: event.error.message });
        return;
      case 'run_finish': {
        this.settle(event.generation);
        const entry: FinishEntry = {
          kind: 'finish',
          key: `finish:${event.generation}`,
          generation: event.generation,
          stopReason: event.stopReason,
          verification: event.verification,
          steps: event.steps,
          toolCalls: event.toolCalls,
          toolErrors: event.toolErrors,
          tokens: event.tokens,
          filesChanged: event.filesChanged,
          model: event.model,
          scripted: event.scripted,
        };
        if (event.error) {
          entry.error = event.error;
        }
        if (event.verificationReason) {
          entry.verificationReason = event.verificationReason;
        }
        if (event.invalidatedBy) {
          entry.invalidatedBy = event.invalidatedBy;
        }
        if (event.handoffTo) {
          entry.handoffTo = event.handoffTo;
        }
        const attempt = this.checkAttempt(event.generation);
        if (attempt) {
          entry.lastCheck = attempt;
        }
        this.push(entry);
        return;
      }
    }
  }

  /** A stored session's messages (agent/session pages, oldest first) as entries: prompts, step
   *  headers, text, reasoning, tool calls with their results, and a stop line per run (the store
   *  keeps no run_finish, so it says what the messages show). Harness-written text is left out. */
  history(messages: readonly MessageOut[]): void {
    const runs = new Map<string, StopEntry>();
    const order: string[] = [];
    for (const message of messages) {
      const generation = message.generation ?? `history:${message.id}`;
      const current = order.at(-1);
      const previous = current === undefined ? undefined : runs.get(current);
      if (message.generation && previous && previous.steps > 0 && current !== message.generation) {
        this.push(previous); // the previous run's stop line, before the next run's prompt
      }
      let run = runs.get(generation);
      if (!run && message.generation) {
        run = { kind: 'stop', key: `stop:${generation}`, generation, steps: 0, toolCalls: 0, toolErrors: 0, ended: 'final' };
        runs.set(generation, run);
        order.push(generation);
      }
      if (message.role === 'assistant' && message.step != null) {
        const step = this.upsertStep(generation, message.step, 0);
        if (message.parts.some((p) => p.type === 'tool_call')) {
          step.messageID = message.id;
        }
        if (run) {
          run.steps = Math.max(run.steps, message.step);
          run.ended = message.parts.some((p) => p.type === 'tool_call') ? 'tools' : 'final';
        }
      }
      for (const part of message.parts) {
        switch (part.type) {
          case 'text':
            if (message.role === 'user') {
              if (!part.synthetic) {
                this.push({ kind: 'prompt', key: `prompt:${part.id}`, text: part.text, source: 'run', messageID: message.id });
              }
            } else if (!part.synthetic) {
              this.push({ kind: 'text', key: `text:${part.id}`, generation, text: part.text, final: true });
            }
            break;
          case 'reasoning':
            this.push({ kind: 'reasoning', key: `reasoning:${part.id}`, generation, text: part.text, final: true });
            break;
          case 'tool_call': {
            const args = parseArguments(part.arguments);
            this.push({
              kind: 'tool',
              key: `tool:${generation}:${part.callID}`,
              generation,
              step: message.step ?? 0,
              tool: part.name,
              input: describeInput(args),
              messageID: message.id,
              rawInput: args,
              status: 'running',
              detail: toolDetail(part.name, args),
            });
            if (run) {
              run.toolCalls += 1;
            }
            break;
          }
          case 'tool_result': {
            const entry = this.byKey.get(`tool:${generation}:${part.callID}`) as ToolEntry | undefined;
            if (entry) {
              entry.status = part.ok ? 'completed' : 'error';
              entry.summary = firstLine(part.output);
              entry.output = keepOutput(part.output);
              entry.elapsedMs = part.elapsedMs;
              if (part.errorKind) {
                entry.errorKind = part.errorKind;
              }
              entry.detail = toolDetail(entry.tool, entry.rawInput ?? '', part.output, part.metadata);
              if (entry.detail.check && run) {
                run.lastCheck = entry.detail.check.status;
              }
            }
            if (run && !part.ok) {
              run.toolErrors += 1;
            }
            break;
          }
        }
      }
    }
    // A call stored without its result was cut off (a crash or a cancel): it is not running now.
    for (const entry of this.list) {
      if (entry.kind === 'tool' && entry.status === 'running') {
        entry.status = 'error';
        entry.summary = 'no result was stored';
        const run = runs.get(entry.generation);
        if (run) {
          run.ended = 'interrupted';
        }
      }
    }
    // a run with no reply stored (it failed before its first step) gets no stop line
    const last = runs.get(order.at(-1) ?? '');
    if (last && last.steps > 0) {
      this.push(last);
    }
  }

  /** Plain-text rendering, one line per entry (the log, tests, "copy transcript"). */
  lines(): string[] {
    return this.list.map(describeEntry);
  }

  // --- helpers --------------------------------------------------------------------------------

  private fresh(prefix: string): string {
    this.counter += 1;
    return `${prefix}:${this.counter}`;
  }

  private push(entry: Entry): void {
    if (this.byKey.has(entry.key)) {
      return;
    }
    this.list.push(entry);
    this.byKey.set(entry.key, entry);
    this.dirty.add(entry.key);
    while (this.list.length > this.limit) {
      const dropped = this.list.shift();
      if (dropped) {
        this.byKey.delete(dropped.key);
        this.dirty.delete(dropped.key);
        this.removed.push(dropped.key);
      }
    }
  }

  private upsertStep(generation: string, step: number, maxSteps: number): StepEntry {
    const key = `step:${generation}:${step}`;
    let entry = this.byKey.get(key) as StepEntry | undefined;
    if (!entry) {
      entry = { kind: 'step', key, generation, step, maxSteps };
      this.push(entry);
    } else if (maxSteps) {
      entry.maxSteps = maxSteps;
      this.dirty.add(key);
    }
    return entry;
  }

  private finishText(kind: 'text' | 'reasoning', generation: string, partID: string, text: string): void {
    const key = `${kind}:${partID}`;
    let entry = this.byKey.get(key) as TextEntry | undefined;
    if (!entry && kind === 'reasoning') {
      // A provider may give the finished reasoning part a new ID: adopt the streaming entry.
      entry = this.list.find(
        (e): e is TextEntry => e.kind === 'reasoning' && e.generation === generation && !e.final,
      );
      if (entry) {
        // the row's key changes: the view draws everything again
        this.byKey.delete(entry.key);
        entry.key = key;
        this.byKey.set(key, entry);
        this.structural = true;
      }
    }
    if (entry) {
      entry.text = text;
      entry.final = true;
      this.dirty.add(key);
    } else {
      this.push({ kind, key, generation, text, final: true });
    }
  }

  private upsertTool(generation: string, step: number, part: ToolPartInfo): void {
    const key = `tool:${generation}:${part.callID}`;
    let entry = this.byKey.get(key) as ToolEntry | undefined;
    if (!entry) {
      entry = {
        kind: 'tool',
        key,
        generation,
        step,
        tool: part.tool,
        input: describeInput(part.state.input),
        status: part.state.status,
      };
      this.push(entry);
    }
    if (part.messageID && entry.messageID !== part.messageID) {
      entry.messageID = part.messageID;
      // the step made a call: its header can offer going back to before it
      const header = this.byKey.get(`step:${generation}:${step}`);
      if (header?.kind === 'step' && header.messageID !== part.messageID) {
        header.messageID = part.messageID;
        this.dirty.add(header.key);
      }
    }
    entry.status = part.state.status;
    entry.rawInput = part.state.input;
    if (part.state.output != null) {
      entry.summary = firstLine(part.state.output);
      entry.output = keepOutput(part.state.output);
    }
    if (part.state.errorKind) {
      entry.errorKind = part.state.errorKind;
    }
    if (part.state.elapsedMs != null) {
      entry.elapsedMs = part.state.elapsedMs;
    }
    entry.detail = toolDetail(entry.tool, part.state.input, part.state.output ?? undefined, part.state.metadata);
    this.dirty.add(key);
  }

  /** How the generation's last verify_project call ended (undefined when it made none). */
  private checkAttempt(generation: string): FinishEntry['lastCheck'] {
    for (const entry of [...this.list].reverse()) {
      if (entry.kind !== 'tool' || entry.generation !== generation || entry.tool !== 'verify_project') {
        continue;
      }
      if (entry.errorKind === 'denied' || entry.errorKind === 'cancelled') {
        return entry.errorKind;
      }
      return entry.detail?.check?.status ?? (entry.status === 'completed' ? 'passed' : 'error');
    }
    return undefined;
  }

  /** The generation ended: nothing of it streams any more. */
  private settle(generation: string): void {
    for (const entry of this.list) {
      if ((entry.kind === 'text' || entry.kind === 'reasoning') && entry.generation === generation && !entry.final) {
        entry.final = true;
        this.dirty.add(entry.key);
      }
    }
  }
}

/** A stored call's arguments (JSON text) as an object, or the text itself when it is not JSON. */
function parseArguments(text: string): Record<string, unknown> | string {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : text;
  } catch {
    return text;
  }
}

const WRITER: Record<InvalidatedBy['by'], string> = {
  agent_tool: "the agent's edit",
  command: 'a command the agent ran',
  outside_process: 'a change outside the agent (you in the editor, or another program)',
};

/** Why a run that had passed its check ends `not_run`: the server's reason, else built from
 *  `invalidatedBy`; undefined when there was no downgrade. */
export function verificationNote(entry: FinishEntry): string | undefined {
  const by = entry.invalidatedBy;
  if (!entry.verificationReason && !by) {
    return undefined;
  }
  let why = entry.verificationReason ?? '';
  if (!why && by) {
    const where = [by.tool, by.step != null ? `step ${by.step}` : ''].filter(Boolean).join(', ');
    why = `${by.paths.join(', ') || 'a file'} written by ${WRITER[by.by]}${where ? ` (${where})` : ''} after the last check`;
  }
  return `Why not verified: ${why.replace(/[.\s]+$/, '')}. The checks have to run again (ask the agent to verify) for a verified result.`;
}

const WHO_CHANGED: Record<InvalidatedBy['by'], string> = {
  agent_tool: "the agent's own edit",
  command: 'a command the agent ran',
  outside_process: 'a change outside the agent (your edit or revert, or another program)',
};

/** What the run's verification means, in words (the footer's first line). */
export function verificationWords(entry: FinishEntry): string {
  switch (entry.verification) {
    case 'verified':
      return 'Verified: the check passed after the last write.';
    case 'failed':
      return 'Failed: the last check failed, and nothing was written after it that could have fixed it.';
    case 'not_run': {
      const by = entry.invalidatedBy;
      if (by) {
        const paths = by.paths.join(', ') || 'a file';
        const later = entry.invalidatedLater ? ' after the run' : '';
        const who = by.by === 'outside_process' && entry.revertedByUser ? 'your revert' : WHO_CHANGED[by.by];
        return `Not verified: ${who} changed ${paths} after the check${later}.`;
      }
      if (entry.lastCheck === 'denied') {
        return 'Not run: the check was denied.';
      }
      if (entry.lastCheck === 'cancelled') {
        return 'Not run: the check was cancelled.';
      }
      if (entry.lastCheck === 'error') {
        return 'Not run: the check could not run (see its row).';
      }
      if (entry.toolCalls === 0) {
        return 'Not run: the agent made no tool calls, so nothing was checked.';
      }
      return entry.filesChanged.length
        ? 'Not verified: files changed and no check ran after them.'
        : 'Not run: no check ran in this task.';
    }
  }
}

/** A replayed run's stop line. */
export function stopLine(entry: StopEntry): string {
  const how = entry.ended === 'final' ? 'the agent answered' : entry.ended === 'interrupted' ? 'interrupted (a call has no stored result)' : 'ended after tool calls';
  const check = entry.lastCheck ? ` · last check: ${entry.lastCheck}` : ' · no check ran';
  return `Run ended: ${how} · ${plural(entry.steps, 'step')} · ${plural(entry.toolCalls, 'tool call')} (${plural(entry.toolErrors, 'error')})${check}`;
}

function rank(status: ReceiptStatus | 'sending'): number {
  return status === 'sending' ? 0 : status === 'accepted' ? 1 : 2;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function finishSummary(entry: FinishEntry): string {
  const parts = [
    `stop: ${entry.stopReason}`,
    `verification: ${entry.verification}`,
    plural(entry.steps, 'step'),
    `${plural(entry.toolCalls, 'tool call')} (${plural(entry.toolErrors, 'error')})`,
    formatTokens(entry.tokens),
  ];
  if (entry.filesChanged.length) {
    parts.push(`files changed: ${entry.filesChanged.join(', ')}`);
  }
  parts.push(entry.scripted ? `model: ${entry.model} [scripted]` : `model: ${entry.model}`);
  return parts.join(' · ');
}

export function describeEntry(entry: Entry): string {
  switch (entry.kind) {
    case 'prompt':
      return `${entry.source === 'queue' ? '>> (queued) ' : '>> '}${entry.text}`;
    case 'step': {
      const head = entry.maxSteps ? `-- step ${entry.step}/${entry.maxSteps}` : `-- step ${entry.step}`;
      return entry.tokens ? `${head} · ${formatTokens(entry.tokens)}` : head;
    }
    case 'text':
      return entry.final ? entry.text : `${entry.text}▍`;
    case 'reasoning':
      return `(thinking) ${firstLine(entry.text)}`;
    case 'tool': {
      const mark = entry.status === 'running' ? '…' : entry.status === 'completed' ? '✓' : '✗';
      const head = `  ${mark} ${entry.tool}${entry.input ? ` ${entry.input}` : ''}`;
      return entry.summary ? `${head} → ${entry.summary}` : head;
    }
    case 'notice':
      return `  ! ${entry.noticeKind}: ${entry.message}`;
    case 'error':
      return `  x ${entry.errorKind}: ${entry.message}`;
    case 'steer': {
      const why = entry.reason ? ` (${entry.reason}${entry.detail ? `: ${entry.detail}` : ''})` : '';
      return `~> steer [${entry.status}${why}] ${entry.text}`;
    }
    case 'finish': {
      const note = verificationNote(entry);
      return `== ${finishSummary(entry)}${entry.error ? ` · error: ${entry.error.message}` : ''}${note ? ` · ${note}` : ''}`;
    }
    case 'stop':
      return `== ${stopLine(entry)}`;
    case 'info':
      return `-- ${entry.message}`;
  }
}
