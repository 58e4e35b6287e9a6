// "Restore to here" and /rewind: take the workspace, the conversation or both back to before a
// message. The flow (choose what to restore, preview the diff, settle conflicts, offer Undo, follow
// the fork) runs over a small UI port, so it is unit-tested without VS Code; rewindHost.ts gives it
// VS Code's QuickPick, modals and diff documents.

import { UserError } from './agentClient.js';
import type { PickItem } from './host.js';
import { Methods } from './protocol.js';
import type { CheckpointOut, MessageOut, RewindParams, RewindResult, SessionResult } from './protocol.js';
import { describeError, errorFacts } from './rpc.js';

export const REWIND_COMMAND = 'lspAgent.rewind';
export const RESTORE_TO_HERE_COMMAND = 'lspAgent.restoreToHere';

export type RestoreWhat = 'code' | 'conversation' | 'both';

export interface RestoreChoice extends PickItem {
  restore: RestoreWhat;
  preview: boolean;
}

/** What "Restore to here" offers: the three kinds of restore and a dry run of the code first. */
export const RESTORE_CHOICES: readonly RestoreChoice[] = [
  { label: 'Restore code', detail: 'Put the files back as they were before this point; the conversation goes on as it is.', restore: 'code', preview: false },
  { label: 'Restore conversation', detail: 'Continue from before this point in a fork of the session; the files stay as they are.', restore: 'conversation', preview: false },
  { label: 'Restore code and conversation', detail: 'Both: the files as they were, and a fork of the session from before this point.', restore: 'both', preview: false },
  { label: 'Preview code changes first…', detail: 'Show the diff a code restore would apply, then decide.', restore: 'code', preview: true },
];

/** A row of the /rewind picker: a message of the session to go back to. */
export interface RewindPoint extends PickItem {
  messageID: string;
}

const LABEL_CHARS = 80;

function oneLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  return line.length > LABEL_CHARS ? `${line.slice(0, LABEL_CHARS - 1)}…` : line;
}

/** "just now", "5 min ago", "3 h ago", "2 days ago": when a step ran, as the picker shows it. */
export function relativeTime(whenSeconds: number, nowMs: number): string {
  const seconds = Math.max(0, Math.round(nowMs / 1000 - whenSeconds));
  if (seconds < 60) {
    return 'just now';
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86_400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  const days = Math.floor(seconds / 86_400);
  return `${days} day${days === 1 ? '' : 's'} ago`;
}

/**
 * The session's user messages and steps with tool calls, newest first: a prompt by its text, a
 * step by its tools and the files its checkpoints recorded, each with when it ran (a prompt: when
 * its run's first step did).
 */
export function rewindPoints(messages: readonly MessageOut[], checkpoints: readonly CheckpointOut[], nowMs: number): RewindPoint[] {
  const byMessage = new Map<string, { files: Set<string>; when: number }>();
  for (const c of checkpoints) {
    if (!c.messageID) {
      continue;
    }
    const seen = byMessage.get(c.messageID) ?? { files: new Set<string>(), when: c.when };
    for (const f of c.files) {
      seen.files.add(f);
    }
    seen.when = Math.min(seen.when, c.when);
    byMessage.set(c.messageID, seen);
  }
  const firstStepWhen = new Map<string, number>();
  for (const m of messages) {
    const when = byMessage.get(m.id)?.when;
    if (m.role === 'assistant' && m.generation && when !== undefined && !firstStepWhen.has(m.generation)) {
      firstStepWhen.set(m.generation, when);
    }
  }
  const points: RewindPoint[] = [];
  for (const m of messages) {
    if (m.role === 'user') {
      const text = m.parts.filter((p) => p.type === 'text' && !p.synthetic).map((p) => (p.type === 'text' ? p.text : '')).join('\n');
      if (!text.trim()) {
        continue; // harness-written (instructions, notes): not something the user said
      }
      const when = m.generation ? firstStepWhen.get(m.generation) : undefined;
      const point: RewindPoint = { label: `$(comment) ${oneLine(text)}`, description: 'your message', messageID: m.id };
      point.detail = `Before this message's run${when !== undefined ? ` · ${relativeTime(when, nowMs)}` : ''}`;
      points.push(point);
    } else if (m.role === 'assistant') {
      const tools = m.parts.flatMap((p) => (p.type === 'tool_call' ? [p.name] : []));
      if (tools.length === 0) {
        continue; // a reply without calls changed nothing
      }
      const seen = byMessage.get(m.id);
      const files = seen ? [...seen.files].sort() : [];
      const point: RewindPoint = {
        label: `$(tools) Step ${m.step ?? '?'}: ${[...new Set(tools)].join(', ')}`,
        description: files.length ? files.join(', ') : 'no files recorded',
        messageID: m.id,
      };
      point.detail = `Before this step's effects${seen ? ` · ${relativeTime(seen.when, nowMs)}` : ''}`;
      points.push(point);
    }
  }
  return points.reverse();
}

/** A refusal of agent/rewind or agent/checkpoints, in words with what to do about it. */
export function rewindErrorText(error: unknown): string {
  const facts = errorFacts(error);
  switch (facts.kind) {
    case 'busy':
      return 'Not restored: the session is running. Stop it (■ Stop) or wait for it to finish, then restore.';
    case 'checkpoint_folded':
      return 'Not restored: that point is older than the checkpoints kept (the oldest are merged to bound disk use). Pick a later message, or raise `checkpoints.per_session` in the settings for the future.';
    case 'checkpoint_unavailable':
      return `Not restored: no usable checkpoint there (${facts.message}). Checkpoints may be off for this workspace, or a file was too large to record.`;
    case 'unknown_message':
      return 'Not restored: that message is not in this session any more. Reopen the session (Sessions…) and pick it again.';
    case 'unknown_session':
      return 'Not restored: the server does not know this session. Reopen it from Sessions…, or start a new one.';
    default:
      return describeError('Rewind', error);
  }
}

/** How many files a unified diff changes (one `+++ ` header each). */
export function diffFileCount(diff: string): number {
  return diff.split('\n').filter((line) => line.startsWith('+++ ')).length;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** What a finished code restore says, and the problems it should also show. */
export function restoredMessage(result: RewindResult): { text: string; problems: string[] } {
  const count = new Set([...(result.restored ?? []), ...(result.inEditor ?? [])]).size;
  let text = count === 0 ? 'Nothing to restore: the files were already as they were there.' : `Restored ${plural(count, 'file')}.`;
  if (result.kept?.length) {
    text += ` Kept your changes to ${result.kept.join(', ')}.`;
  }
  if (result.inEditor?.length) {
    text += ' Open editors were changed in place and saved (Ctrl+Z in the editor also takes it back).';
  }
  const problems = [
    ...Object.entries(result.unrestorable ?? {}).map(([path, why]) => `${path}: cannot be restored (${why})`),
    ...Object.entries(result.failed ?? {}).map(([path, why]) => `${path}: restoring failed (${why})`),
  ];
  return { text, problems };
}

/** The editor services the flow needs; rewindHost.ts implements them with VS Code. */
export interface RewindUi {
  pick<T extends PickItem>(items: T[], options: { title: string; placeHolder: string }): Promise<T | undefined>;
  /** show a dry run's unified diff, read-only */
  showDiff(diff: string): Promise<void>;
  /** after the preview: go on with one of these restores, or undefined to stop */
  confirmAfterPreview(files: number): Promise<RestoreWhat | undefined>;
  /** files changed outside the agent since: true to restore them too, false to keep them, undefined to stop */
  askConflicts(files: readonly string[]): Promise<boolean | undefined>;
  /** save the open editors of these workspace paths; the paths that could not be saved */
  saveEditors(paths: readonly string[]): Promise<string[]>;
  info(message: string, ...actions: string[]): Promise<string | undefined>;
  warn(message: string): Promise<void>;
  error(message: string): Promise<void>;
}

/** The agent client's part in a rewind. */
export interface RewindClient {
  readonly snapshot: { sessionID?: string; running: boolean };
  send<T>(method: string, params?: unknown): Promise<T>;
  openSession(sessionID: string): Promise<unknown>;
}

export const UNDO_ACTION = 'Undo';
const PAGE = 500;
const MAX_PAGES = 40;

export class RewindFlow {
  constructor(
    private readonly client: RewindClient,
    private readonly ui: RewindUi,
    private readonly now: () => number = Date.now,
  ) {}

  /** /rewind and the palette command: pick a message of the current session, then restore to it. */
  async pickAndRestore(): Promise<void> {
    await this.reported(async () => {
      const sessionID = this.needIdle();
      const messages = await this.messages(sessionID);
      const listed = await this.client.send<{ checkpoints: CheckpointOut[] }>(Methods.checkpoints, { sessionID });
      const points = rewindPoints(messages, listed.checkpoints, this.now());
      if (points.length === 0) {
        throw new UserError('Nothing to rewind to yet: this session has no messages.');
      }
      const point = await this.ui.pick(points, { title: 'LSP Agent: Rewind', placeHolder: 'Go back to before which message or step?' });
      if (point) {
        await this.choose(sessionID, point.messageID);
      }
    });
  }

  /** The session's stored messages, page by page (oldest first). */
  private async messages(sessionID: string): Promise<MessageOut[]> {
    const messages: MessageOut[] = [];
    let after: string | undefined;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const answer = await this.client.send<SessionResult>(Methods.session, { sessionID, limit: PAGE, ...(after ? { after } : {}) });
      messages.push(...answer.messages);
      after = answer.next ?? undefined;
      if (!after) {
        break;
      }
    }
    return messages;
  }

  /** A "Restore to here" button of the transcript. */
  async restoreTo(messageID: string): Promise<void> {
    await this.reported(async () => this.choose(this.needIdle(), messageID));
  }

  private needIdle(): string {
    const { sessionID, running } = this.client.snapshot;
    if (!sessionID) {
      throw new UserError('No agent session yet: run a task first.');
    }
    if (running) {
      throw new UserError('A task is running: stop it (■ Stop) or wait for it to finish, then restore.');
    }
    return sessionID;
  }

  private async choose(sessionID: string, messageID: string): Promise<void> {
    const choice = await this.ui.pick([...RESTORE_CHOICES], { title: 'LSP Agent: Restore to Here', placeHolder: 'What should go back to before this point?' });
    if (!choice) {
      return;
    }
    let restore: RestoreWhat = choice.restore;
    let preview: RewindResult | undefined;
    if (choice.preview) {
      preview = await this.rewind({ sessionID, toMessageID: messageID, restore: 'code', dryRun: true });
      if (!preview.diff) {
        await this.ui.info('Nothing to restore: the files are as they were there.');
        return;
      }
      await this.ui.showDiff(preview.diff);
      const next = await this.ui.confirmAfterPreview(diffFileCount(preview.diff));
      if (!next) {
        return;
      }
      restore = next;
    }
    await this.apply(sessionID, messageID, restore, preview);
  }

  private async apply(sessionID: string, toMessageID: string, restore: RestoreWhat, preview?: RewindResult): Promise<void> {
    let confirm = false;
    if (restore !== 'conversation') {
      // a dry run first: files changed outside the agent since are the user's to decide on, before anything moves
      const plan = preview ?? (await this.rewind({ sessionID, toMessageID, restore: 'code', dryRun: true }));
      if (plan.conflicts?.length) {
        const answer = await this.ui.askConflicts(plan.conflicts);
        if (answer === undefined) {
          return;
        }
        confirm = answer;
      }
    }
    const result = await this.rewind({ sessionID, toMessageID, restore, confirm });
    if (restore !== 'code' && result.sessionID) {
      // the fork is the session now: shown like a reopened one; the text in the agent input stays
      await this.client.openSession(result.sessionID);
    }
    if (restore === 'conversation') {
      await this.ui.info('Conversation restored: the session continues from before that point (a fork; the old one is under Sessions…).');
      return;
    }
    await this.saveRestored(result);
    const { text, problems } = restoredMessage(result);
    if (problems.length) {
      await this.ui.warn(`Some files were not restored: ${problems.join('; ')}`);
    }
    const undo = result.undo;
    const action = undo ? await this.ui.info(text, UNDO_ACTION) : await this.ui.info(text);
    if (action === UNDO_ACTION && undo) {
      await this.undo(sessionID, undo); // the checkpoint was recorded for the session rewound
    }
  }

  private async undo(sessionID: string, checkpoint: string): Promise<void> {
    await this.reported(async () => {
      const undone = await this.rewind({ sessionID, toMessageID: checkpoint, restore: 'code', confirm: true });
      await this.saveRestored(undone);
      const { text, problems } = restoredMessage(undone);
      if (problems.length) {
        await this.ui.warn(`Some files were not put back: ${problems.join('; ')}`);
      }
      await this.ui.info(`Undone: ${text.replace(/^Restored/, 'put back')}`);
    });
  }

  /** Open files are restored through their buffers; saving them makes the disk match too, so the
   *  files are back exactly, and the next checkpoint (an Undo's target) records what the user sees.
   *  Ctrl+Z in the editor still takes the restore back. */
  private async saveRestored(result: RewindResult): Promise<void> {
    const inEditor = result.inEditor ?? [];
    if (inEditor.length === 0) {
      return;
    }
    const unsaved = await this.ui.saveEditors(inEditor);
    if (unsaved.length) {
      await this.ui.warn(`Restored in the editor but not saved: ${unsaved.join(', ')}. Save them to keep the restore on disk.`);
    }
  }

  private rewind(params: RewindParams): Promise<RewindResult> {
    return this.client.send<RewindResult>(Methods.rewind, params);
  }

  private async reported(work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      await this.ui.error(error instanceof UserError ? `LSP Agent: ${error.message}` : `LSP Agent: ${rewindErrorText(error)}`);
    }
  }
}
