// Queue UI state: which rows are waiting, which form the steerable prefix, what the queue view
// shows for each row, and what the Steer Now gesture (ctrl+s) does. Pure: no `vscode`.
//
// The server decides: every row carries its verdict (`steerable`, and `steerBlocker` saying why
// not), computed by the core's rule; the client only reads it to label rows and to say in advance
// what ctrl+s will do.

import type { QueueItem } from './protocol.js';

export function isWaiting(item: QueueItem): boolean {
  return item.status === 'queued' || item.status === 'paused';
}

/** Why a row cannot be steered into the running generation, or undefined when it can: the
 *  server's verdict on the row (`steerable`, `steerBlocker`), never re-derived here. */
export function steerBlocker(item: QueueItem): string | undefined {
  return item.steerable ? undefined : (item.steerBlocker ?? 'the server says it cannot be steered');
}

/** Waiting rows in FIFO order (position, then creation time). */
export function waitingItems(items: readonly QueueItem[]): QueueItem[] {
  return items
    .filter(isWaiting)
    .sort((a, b) => a.position - b.position || a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}

/** Rows that are no longer waiting, newest change first. */
export function settledItems(items: readonly QueueItem[]): QueueItem[] {
  return items.filter((i) => !isWaiting(i)).sort((a, b) => b.updatedAt - a.updatedAt || b.id.localeCompare(a.id));
}

/**
 * The steerable prefix: waiting rows in FIFO order up to (not including) the first row that
 * cannot be steered, so a later follow-up never jumps ahead of an earlier one.
 */
export function steerablePrefix(items: readonly QueueItem[]): QueueItem[] {
  const prefix: QueueItem[] = [];
  for (const item of waitingItems(items)) {
    if (steerBlocker(item) !== undefined) {
      break;
    }
    prefix.push(item);
  }
  return prefix;
}

export type SteerNowAction =
  | { kind: 'steerDraft'; text: string }
  | { kind: 'runDraft'; text: string }
  | { kind: 'promotePrefix'; items: QueueItem[] }
  | { kind: 'none'; reason: string };

/**
 * What Steer Now does: with a draft typed, steer the draft (or start it, when nothing runs);
 * with an empty input, promote the queue's steerable prefix (the server sends the first row
 * instead when the generation is gone); otherwise say why nothing happens.
 */
export function decideSteerNow(draft: string, running: boolean, items: readonly QueueItem[]): SteerNowAction {
  const text = draft.trim();
  if (text !== '') {
    return running ? { kind: 'steerDraft', text } : { kind: 'runDraft', text };
  }
  const waiting = waitingItems(items);
  if (waiting.length === 0) {
    return { kind: 'none', reason: running ? 'Nothing to steer: type a correction first.' : 'Nothing to steer: no run and no queued follow-ups.' };
  }
  const prefix = steerablePrefix(items);
  if (prefix.length === 0) {
    const first = waiting[0];
    const why = first ? steerBlocker(first) : undefined;
    return { kind: 'none', reason: `The first queued follow-up cannot be steered (${why ?? 'unknown reason'}); use Send Queued Now.` };
  }
  return { kind: 'promotePrefix', items: prefix };
}

export interface QueueRow {
  id: string;
  item: QueueItem;
  group: 'waiting' | 'history';
  label: string;
  description: string;
  tooltip: string;
  /** `lspAgent.queueItem.waiting[.steerable]` or `lspAgent.queueItem.settled` (menus match on it) */
  contextValue: string;
  /** a codicon name */
  icon: string;
  /** 1-based place in the steerable prefix; 0 when the row is not in it */
  prefixIndex: number;
}

const LABEL_CHARS = 80;

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > LABEL_CHARS ? `${flat.slice(0, LABEL_CHARS - 1)}…` : flat;
}

function settledDescription(item: QueueItem): string {
  if (item.status === 'cancelled' && item.steeredInto) {
    return item.steeredAppliedAt ? 'steered · applied' : 'steered · pending';
  }
  if (item.status === 'failed' && item.error) {
    return `failed · ${item.error}`;
  }
  return item.status;
}

export function queueRows(items: readonly QueueItem[], running: boolean): QueueRow[] {
  const prefix = steerablePrefix(items);
  const prefixIds = new Map(prefix.map((item, index) => [item.id, index + 1]));
  const rows: QueueRow[] = [];
  waitingItems(items).forEach((item, index) => {
    const blocker = steerBlocker(item);
    const prefixIndex = prefixIds.get(item.id) ?? 0;
    const parts = [`#${index + 1}`];
    if (item.status === 'paused') {
      parts.push('paused');
    }
    if (item.kind !== 'follow_up') {
      parts.push(item.kind);
    }
    // Idle, Ctrl+S sends only the first row (the server moves one row, to keep the order).
    const onCtrlS = running ? prefixIndex > 0 : prefixIndex === 1;
    if (onCtrlS) {
      parts.push(running ? 'steers with Ctrl+S' : 'sends with Ctrl+S');
    }
    const tooltip = [item.text, '', blocker ? `Cannot be steered: ${blocker}.` : 'Can be steered into the running task.'];
    if (item.status === 'paused') {
      tooltip.push('Paused after an interrupt: it will not start by itself. Use Send Now.');
    }
    rows.push({
      id: item.id,
      item,
      group: 'waiting',
      label: oneLine(item.text) || `(${item.kind})`,
      description: parts.join(' · '),
      tooltip: tooltip.join('\n'),
      contextValue: blocker ? 'lspAgent.queueItem.waiting' : 'lspAgent.queueItem.waiting.steerable',
      icon: item.status === 'paused' ? 'debug-pause' : onCtrlS ? 'zap' : 'clock',
      prefixIndex,
    });
  });
  for (const item of settledItems(items)) {
    rows.push({
      id: item.id,
      item,
      group: 'history',
      label: oneLine(item.text) || `(${item.kind})`,
      description: settledDescription(item),
      tooltip: `${item.text}\n\n${settledDescription(item)}`,
      contextValue: 'lspAgent.queueItem.settled',
      icon: item.status === 'sent' ? 'check' : item.steeredInto ? 'git-merge' : item.status === 'failed' ? 'error' : 'circle-slash',
      prefixIndex: 0,
    });
  }
  return rows;
}
