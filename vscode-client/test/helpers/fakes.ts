// Test doubles for the edges of the client: the editor (Host, Composer) and a scripted JSON-RPC
// peer. The protocol test uses the real server instead of FakeRpc.

import type { SelectionFacts } from '../../src/corrections.js';
import type { Composer, DocumentFacts, Host, InputOptions, PickItem } from '../../src/host.js';
import type { Disposable, Rpc } from '../../src/rpc.js';

/** A value to answer with, or a function of the params (an Error becomes an error answer). */
type Answer = unknown;

export class FakeRpc implements Rpc {
  readonly sent: { method: string; params: unknown }[] = [];
  private answers = new Map<string, Answer[]>();
  private notificationHandlers = new Map<string, (params: unknown) => void>();
  readonly requestHandlers = new Map<string, (params: unknown) => unknown>();

  /** Queue the answer to the next request of `method` (a function gets the params; an Error is thrown). */
  answer(method: string, answer: Answer): this {
    const list = this.answers.get(method) ?? [];
    list.push(answer);
    this.answers.set(method, list);
    return this;
  }

  sendRequest(method: string, params?: unknown): Promise<unknown> {
    this.sent.push({ method, params });
    const answer = this.answers.get(method)?.shift();
    if (answer === undefined) {
      return Promise.reject(Object.assign(new Error(`Unhandled method ${method}`), { code: -32601 }));
    }
    try {
      const value = typeof answer === 'function' ? (answer as (p: unknown) => unknown)(params) : answer;
      return value instanceof Error ? Promise.reject(value) : Promise.resolve(value);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  onNotification(method: string, handler: (params: unknown) => void): Disposable {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  onRequest(method: string, handler: (params: unknown) => unknown): Disposable {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  /** Deliver a notification as the server would. */
  notify(method: string, params: unknown): void {
    this.notificationHandlers.get(method)?.(params);
  }

  methods(): string[] {
    return this.sent.map((s) => s.method);
  }
}

/** A JSON-RPC error answer as vscode-jsonrpc raises it. */
export function rpcError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, data });
}

export class FakeHost implements Host {
  readonly messages: { level: 'info' | 'warning' | 'error' | 'flash'; text: string }[] = [];
  readonly contexts = new Map<string, unknown>();
  readonly inputs: InputOptions[] = [];
  inputAnswers: (string | undefined)[] = [];
  choice: string | undefined;
  selection: SelectionFacts | undefined;
  document: DocumentFacts | undefined;
  /** the index picked in each quick pick, in order (then `pickIndex`); -1 cancels */
  pickIndexes: number[] = [];
  pickIndex = 0;
  /** the items offered by each quick pick, in order */
  readonly picks: PickItem[][] = [];
  fileAnswer: string | undefined;
  readonly fileDialogs: { title: string; openLabel: string }[] = [];

  showInfo(message: string): Promise<string | undefined> {
    this.messages.push({ level: 'info', text: message });
    return Promise.resolve(this.choice);
  }

  showWarning(message: string): Promise<string | undefined> {
    this.messages.push({ level: 'warning', text: message });
    return Promise.resolve(this.choice);
  }

  showError(message: string): Promise<string | undefined> {
    this.messages.push({ level: 'error', text: message });
    return Promise.resolve(this.choice);
  }

  flash(message: string): void {
    this.messages.push({ level: 'flash', text: message });
  }

  inputBox(options: InputOptions): Promise<string | undefined> {
    this.inputs.push(options);
    return Promise.resolve(this.inputAnswers.shift());
  }

  quickPick<T extends PickItem>(items: T[]): Promise<T | undefined> {
    this.picks.push(items);
    const index = this.pickIndexes.shift() ?? this.pickIndex;
    return Promise.resolve(index < 0 ? undefined : items[index]);
  }

  activeDocument(): DocumentFacts | undefined {
    return this.document;
  }

  pickFile(options: { title: string; openLabel: string }): Promise<string | undefined> {
    this.fileDialogs.push(options);
    return Promise.resolve(this.fileAnswer);
  }

  setContext(key: string, value: unknown): Promise<void> {
    this.contexts.set(key, value);
    return Promise.resolve();
  }

  activeSelection(): SelectionFacts | undefined {
    return this.selection;
  }

  readonly executed: { command: string; args: unknown[] }[] = [];

  /** commands that fail as an unknown command would (e.g. the Remote settings outside a remote window) */
  readonly unknownCommands = new Set<string>();
  remote: string | undefined;

  executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    this.executed.push({ command, args });
    if (this.unknownCommands.has(command)) {
      return Promise.reject(new Error(`command '${command}' not found`));
    }
    return Promise.resolve(undefined);
  }

  remoteName(): string | undefined {
    return this.remote;
  }

  last(level?: FakeHost['messages'][number]['level']): string | undefined {
    const list = level ? this.messages.filter((m) => m.level === level) : this.messages;
    return list[list.length - 1]?.text;
  }
}

export class FakeComposer implements Composer {
  constructor(public text = '') {}
  cleared = 0;

  draft(): Promise<string> {
    return Promise.resolve(this.text);
  }

  clearDraft(): void {
    this.text = '';
    this.cleared += 1;
  }

  setDraft(text: string): void {
    this.text = text;
  }
}
