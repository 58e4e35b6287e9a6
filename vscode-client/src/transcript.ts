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

export interface PromptEntry {
  kind: 'prompt';
  key: string;
  text: string;
  source: 'run' | 'queue';
}

export interface StepEntry {
  kind: 'step';
  key: string;
  generation: string;
  step: number;
  maxSteps: number;
  tokens?: Tokens;
  reason?: 'tool-calls' | 'stop' | 'length';
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
  summary?: string;
  errorKind?: string;
  elapsedMs?: number;
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
  | InfoEntry;

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

  /** Entries beyond `limit` drop off the top (the server keeps the full history). */
  constructor(private readonly limit = 2000) {}

  get entries(): readonly Entry[] {
    return this.list;
  }

  clear(): void {
    this.list = [];
    this.byKey.clear();
  }

  info(message: string): void {
    this.push({ kind: 'info', key: this.fresh('info'), message });
  }

  /** A user prompt; given its generation, it goes before that generation's entries already shown. */
  prompt(text: string, source: PromptEntry['source'] = 'run', generation?: string): void {
    const entry: PromptEntry = { kind: 'prompt', key: this.fresh('prompt'), text, source };
    const first = generation === undefined ? -1 : this.list.findIndex((e) => 'generation' in e && e.generation === generation);
    if (first < 0) {
      this.push(entry);
      return;
    }
    this.list.splice(first, 0, entry);
    this.byKey.set(entry.key, entry);
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
        this.push(entry);
        return;
      }
    }
  }

  /** A stored session's messages (agent/session pages, oldest first) as entries: prompts, text,
   *  reasoning and tool calls with their results. Harness-written (synthetic) text is left out. */
  history(messages: readonly MessageOut[]): void {
    for (const message of messages) {
      const generation = message.generation ?? `history:${message.id}`;
      for (const part of message.parts) {
        switch (part.type) {
          case 'text':
            if (message.role === 'user') {
              if (!part.synthetic) {
                this.push({ kind: 'prompt', key: `prompt:${part.id}`, text: part.text, source: 'run' });
              }
            } else if (!part.synthetic) {
              this.push({ kind: 'text', key: `text:${part.id}`, generation, text: part.text, final: true });
            }
            break;
          case 'reasoning':
            this.push({ kind: 'reasoning', key: `reasoning:${part.id}`, generation, text: part.text, final: true });
            break;
          case 'tool_call':
            this.push({
              kind: 'tool',
              key: `tool:${generation}:${part.callID}`,
              generation,
              step: message.step ?? 0,
              tool: part.name,
              input: describeInput(parseArguments(part.arguments)),
              status: 'running',
            });
            break;
          case 'tool_result': {
            const entry = this.byKey.get(`tool:${generation}:${part.callID}`) as ToolEntry | undefined;
            if (entry) {
              entry.status = part.ok ? 'completed' : 'error';
              entry.summary = firstLine(part.output);
              entry.elapsedMs = part.elapsedMs;
              if (part.errorKind) {
                entry.errorKind = part.errorKind;
              }
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
      }
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
    while (this.list.length > this.limit) {
      const dropped = this.list.shift();
      if (dropped) {
        this.byKey.delete(dropped.key);
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
        this.byKey.delete(entry.key);
        entry.key = key;
        this.byKey.set(key, entry);
      }
    }
    if (entry) {
      entry.text = text;
      entry.final = true;
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
    entry.status = part.state.status;
    if (part.state.output != null) {
      entry.summary = firstLine(part.state.output);
    }
    if (part.state.errorKind) {
      entry.errorKind = part.state.errorKind;
    }
    if (part.state.elapsedMs != null) {
      entry.elapsedMs = part.state.elapsedMs;
    }
  }

  /** The generation ended: nothing of it streams any more. */
  private settle(generation: string): void {
    for (const entry of this.list) {
      if ((entry.kind === 'text' || entry.kind === 'reasoning') && entry.generation === generation) {
        entry.final = true;
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
    case 'info':
      return `-- ${entry.message}`;
  }
}
