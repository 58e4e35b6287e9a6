// The JSON-RPC surface the client logic needs. vscode-languageclient's LanguageClient (in the
// extension) and vscode-jsonrpc's MessageConnection (in the protocol test) both provide it, so
// the logic above this line runs unchanged against the real server in tests.

import { ErrorCodes } from './protocol.js';

export interface Disposable {
  dispose(): void;
}

export interface Rpc {
  sendRequest(method: string, params?: unknown): Promise<unknown>;
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
  onRequest(method: string, handler: (params: unknown) => unknown): Disposable;
}

/** What an error answer said, in the shape docs/protocol.md documents (`data: {kind, status, field?}`). */
export interface ErrorFacts {
  code?: number;
  message: string;
  kind?: string;
  status?: number;
  field?: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

export function errorFacts(error: unknown): ErrorFacts {
  const obj = record(error);
  const message = typeof obj?.message === 'string' ? obj.message : String(error);
  const facts: ErrorFacts = { message };
  if (typeof obj?.code === 'number') {
    facts.code = obj.code;
  }
  const data = record(obj?.data);
  if (typeof data?.kind === 'string') {
    facts.kind = data.kind;
  }
  if (typeof data?.status === 'number') {
    facts.status = data.status;
  }
  if (typeof data?.field === 'string') {
    facts.field = data.field;
  }
  return facts;
}

export function isMethodNotFound(error: unknown): boolean {
  return errorFacts(error).code === ErrorCodes.methodNotFound;
}

export function isConflict(error: unknown): boolean {
  const facts = errorFacts(error);
  return facts.code === ErrorCodes.conflict || facts.status === 409;
}

/** A message for the user: what failed and, for the documented error kinds, what to do. */
export function describeError(what: string, error: unknown): string {
  const facts = errorFacts(error);
  if (facts.code === ErrorCodes.methodNotFound) {
    return `${what}: this lsp-agent server does not support it yet (update lsp-agent).`;
  }
  return `${what} failed: ${facts.message}`;
}
