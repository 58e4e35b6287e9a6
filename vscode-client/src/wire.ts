// Reading the server's answers and notifications: each reader accepts exactly the shape the
// generated protocol declares (src/protocol.gen.ts) and throws ProtocolMismatch on anything else,
// so a server/client skew is an error with a name, not a silently empty queue.

import type * as gen from './protocol.gen.js';
import type { QueueItem, QueueSteerResult, RunResult } from './protocol.js';

export class ProtocolMismatch extends Error {
  override name = 'ProtocolMismatch';
}

type Obj = Record<string, unknown>;

function object(value: unknown, what: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolMismatch(`${what}: expected an object`);
  }
  return value as Obj;
}

function field(obj: Obj, name: string, kind: 'string' | 'number' | 'boolean', what: string): void {
  if (typeof obj[name] !== kind) {
    throw new ProtocolMismatch(`${what}: \`${name}\` must be a ${kind}`);
  }
}

function list(obj: Obj, name: string, what: string): unknown[] {
  const value = obj[name];
  if (!Array.isArray(value)) {
    throw new ProtocolMismatch(`${what}: \`${name}\` must be a list`);
  }
  return value;
}

function optional<T>(obj: Obj, name: string, read: (value: unknown) => T): T | undefined {
  const value = obj[name];
  return value === undefined || value === null ? undefined : read(value);
}

export function queueItem(value: unknown, what = 'queue row'): QueueItem {
  const obj = object(value, what);
  for (const name of ['id', 'sessionID', 'kind', 'text', 'status']) {
    field(obj, name, 'string', what);
  }
  for (const name of ['position', 'createdAt', 'updatedAt']) {
    field(obj, name, 'number', what);
  }
  field(obj, 'steerable', 'boolean', what);
  return obj as unknown as QueueItem;
}

export function runResult(value: unknown, what = 'run result'): RunResult {
  const obj = object(value, what);
  field(obj, 'sessionID', 'string', what);
  field(obj, 'generation', 'string', what);
  return obj as unknown as RunResult;
}

export function receipt(value: unknown, what = 'receipt'): gen.ReceiptOut {
  const obj = object(value, what);
  field(obj, 'status', 'string', what);
  field(obj, 'clientID', 'string', what);
  return obj as unknown as gen.ReceiptOut;
}

/** agent/queue/list, and the `items` of agent/queueChanged. */
export function queueItems(value: unknown, what = 'agent/queue/list'): QueueItem[] {
  return list(object(value, what), 'items', what).map((row) => queueItem(row, `${what} row`));
}

/** agent/queue/add, agent/queue/sendNow (`{item, started?}`); cancel and edit (`{item}`). */
export function itemResult(value: unknown, what: string): { item: QueueItem; started?: RunResult } {
  const obj = object(value, what);
  const item = queueItem(obj.item, `${what} item`);
  const started = optional(obj, 'started', (v) => runResult(v, `${what} started`));
  return started ? { item, started } : { item };
}

/** agent/queue/steer, and each entry of agent/steerPrefix. */
export function steerResult(value: unknown, what = 'agent/queue/steer'): QueueSteerResult {
  const obj = object(value, what);
  if (!('receipt' in obj)) {
    throw new ProtocolMismatch(`${what}: \`receipt\` is missing (null when idle)`);
  }
  const result: QueueSteerResult = { item: queueItem(obj.item, `${what} item`), receipt: null };
  const found = optional(obj, 'receipt', (v) => receipt(v, `${what} receipt`));
  if (found) {
    result.receipt = found;
  }
  const reason = optional(obj, 'reason', (v) => v as gen.RejectReason);
  if (reason) {
    result.reason = reason;
  }
  const started = optional(obj, 'started', (v) => runResult(v, `${what} started`));
  if (started) {
    result.started = started;
  }
  return result;
}

/** agent/steerPrefix: `{results}`. */
export function steerPrefixResult(value: unknown): QueueSteerResult[] {
  const what = 'agent/steerPrefix';
  return list(object(value, what), 'results', what).map((entry) => steerResult(entry, `${what} result`));
}
