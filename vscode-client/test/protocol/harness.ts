// Drives the real Python server (`python -m lsp_agent serve`) over stdio with vscode-jsonrpc,
// the way the extension does through vscode-languageclient: the same initialize capabilities
// that matter to the server, the same settings mapping (settings.ts), the same AgentClient and
// the same agent/saveDocuments handler. Only the editor (open buffers, applyEdit) is modelled.

import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import type { TextEdit } from 'vscode-languageserver-textdocument';

import { AgentClient } from '../../src/agentClient.js';
import type { AgentClientOptions } from '../../src/agentClient.js';
import { Notifications, ServerRequests } from '../../src/protocol.js';
import type { EventParams } from '../../src/protocol.js';
import type { Rpc } from '../../src/rpc.js';
import { saveDocuments } from '../../src/saveDocuments.js';
import type { OpenDocuments } from '../../src/saveDocuments.js';
import { SettingsSync, answerConfiguration, serverSettings } from '../../src/settings.js';
import type { ServerSettings } from '../../src/settings.js';

export const PYTHON = process.env.LSP_AGENT_PYTHON ?? 'python3';
export const FIXTURES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures');
const TIMEOUT_MS = 30_000;

/** The custom methods the server offers (from `python -m lsp_agent schema`). */
export function serverMethods(): Set<string> {
  const result = spawnSync(PYTHON, ['-m', 'lsp_agent', 'schema'], { encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`${PYTHON} -m lsp_agent schema failed: ${result.stderr || String(result.error)}`);
  }
  const schema = JSON.parse(result.stdout) as { methods: Record<string, unknown> };
  return new Set(Object.keys(schema.methods));
}

export function fixture(name: string): string {
  return path.join(FIXTURES, name);
}

/** A fresh workspace with `a.txt`, plus the given files. */
export function workspace(files: Record<string, string> = {}): string {
  const root = mkdtempSync(path.join(tmpdir(), 'lsp-agent-vscode-ws-'));
  writeFileSync(path.join(root, 'a.txt'), 'hello\n');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  return root;
}

/** An open editor buffer: text plus version, saved to disk on request. */
class OpenBuffer {
  dirty = false;
  constructor(
    readonly uri: string,
    readonly file: string,
    public doc: TextDocument,
  ) {}

  save(): Promise<boolean> {
    writeFileSync(this.file, this.doc.getText());
    this.dirty = false;
    return Promise.resolve(true);
  }

  get isDirty(): boolean {
    return this.dirty;
  }
}

interface TextDocumentEditLike {
  textDocument: { uri: string; version: number | null };
  edits: TextEdit[];
}

export class Editor {
  readonly client: AgentClient;
  readonly events: EventParams[] = [];
  readonly messages: { type: number; message: string }[] = [];
  readonly saveRequests: string[][] = [];
  readonly configurationRequests: unknown[] = [];
  /** every agent/workspaceTrustChanged, in order */
  readonly trustNotifications: unknown[] = [];
  /** told about each agent/workspaceTrustChanged, as the extension's trust.ts is */
  onTrustChanged: ((params: unknown) => void) | undefined;
  private readonly buffers = new Map<string, OpenBuffer>();
  /** Told about each workspace/applyEdit before it is applied, as the extension's middleware is. */
  beforeApplyEdit: ((edit: unknown) => void) | undefined;
  private readonly sync = new SettingsSync();
  private exited: Promise<void>;

  private constructor(
    readonly root: string,
    readonly child: ChildProcessWithoutNullStreams,
    readonly connection: MessageConnection,
    public settings: ServerSettings,
    private readonly stateDir: string,
    clientOptions: AgentClientOptions = {},
  ) {
    this.client = new AgentClient(clientOptions);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /**
   * Start the server for `root` with these VS Code settings (relative keys, as the user set
   * them) and initialize it like the extension.
   */
  static async start(
    root: string,
    userSettings: Record<string, unknown>,
    clientOptions: AgentClientOptions = {},
    /** initializationOptions that are not settings (`clientVersion`), as the extension adds them */
    extraInitOptions: Record<string, unknown> = {},
  ): Promise<Editor> {
    const state = mkdtempSync(path.join(tmpdir(), 'lsp-agent-vscode-state-'));
    const child = spawn(PYTHON, ['-m', 'lsp_agent', 'serve'], {
      cwd: root,
      // Own state and config directories: the test never touches the user's.
      env: { ...process.env, LSP_AGENT_STATE_DIR: state, XDG_CONFIG_HOME: path.join(state, 'config'), PYTHONUNBUFFERED: '1' },
      stdio: 'pipe',
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer | string) => {
      stderr = (stderr + String(chunk)).slice(-20_000);
    });
    child.once('exit', (code) => {
      if (code) {
        process.stderr.write(`server exited with ${code}:\n${stderr}\n`);
      }
    });
    const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    const settings = serverSettings((key) => userSettings[key]);
    const editor = new Editor(root, child, connection, settings, state, clientOptions);
    editor.wire();
    connection.listen();
    await withTimeout(
      connection.sendRequest('initialize', {
        processId: process.pid,
        clientInfo: { name: 'lsp-agent vscode protocol test' },
        rootUri: pathToFileURL(root).toString(),
        workspaceFolders: [{ uri: pathToFileURL(root).toString(), name: path.basename(root) }],
        capabilities: {
          workspace: {
            applyEdit: true,
            workspaceEdit: { documentChanges: true, resourceOperations: ['create', 'rename', 'delete'] },
            configuration: true,
            didChangeConfiguration: { dynamicRegistration: true },
            workspaceFolders: true,
          },
          window: { workDoneProgress: true, showMessage: {} },
          textDocument: { synchronization: { didSave: true, dynamicRegistration: true }, publishDiagnostics: {} },
          general: { positionEncodings: ['utf-16'] },
        },
        initializationOptions: { ...editor.sync.initializationOptions(settings), ...extraInitOptions },
      }),
      'initialize',
    );
    await connection.sendNotification('initialized', {});
    return editor;
  }

  private wire(): void {
    const c = this.connection;
    // The Rpc the AgentClient gets is the connection itself, with agent/event teed into a log.
    const rpc: Rpc = {
      sendRequest: (method, params) => c.sendRequest(method, params),
      onNotification: (method, handler) =>
        c.onNotification(method, (params: unknown) => {
          if (method === Notifications.event) {
            this.events.push(params as EventParams);
          }
          handler(params);
        }),
      onRequest: (method, handler) => c.onRequest(method, (params: unknown) => handler(params)),
    };
    this.client.attach(rpc);
    const documents: OpenDocuments = { find: (uri) => this.buffers.get(uri) };
    c.onRequest(ServerRequests.saveDocuments, (params: { uris: string[] }) => {
      this.saveRequests.push(params.uris);
      return saveDocuments(params, documents);
    });
    c.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) => {
      this.configurationRequests.push(params);
      return answerConfiguration(params.items, this.sync.section(this.settings), () => null);
    });
    c.onRequest('workspace/applyEdit', (params: { edit: { documentChanges?: TextDocumentEditLike[] } }) => this.applyEdit(params.edit));
    c.onRequest('window/workDoneProgress/create', () => null);
    c.onRequest('client/registerCapability', () => null);
    c.onRequest('client/unregisterCapability', () => null);
    c.onNotification('window/showMessage', (params: { type: number; message: string }) => {
      this.messages.push(params);
    });
    c.onNotification('agent/workspaceTrustChanged', (params: unknown) => {
      this.trustNotifications.push(params);
      this.onTrustChanged?.(params);
    });
    c.onNotification('window/logMessage', () => undefined);
    c.onNotification('$/progress', () => undefined);
    c.onNotification('textDocument/publishDiagnostics', () => undefined);
  }

  // --- the editor side --------------------------------------------------------------------------

  /** Open a workspace file in an editor buffer (didOpen). */
  async open(relative: string): Promise<string> {
    const file = path.join(this.root, relative);
    const uri = pathToFileURL(file).toString();
    const doc = TextDocument.create(uri, 'plaintext', 1, readFileSync(file, 'utf8'));
    this.buffers.set(uri, new OpenBuffer(uri, file, doc));
    await this.connection.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: 'plaintext', version: 1, text: doc.getText() },
    });
    return uri;
  }

  text(uri: string): string | undefined {
    return this.buffers.get(uri)?.doc.getText();
  }

  /** Replace an open buffer's whole text as a user edit (didChange) and save it (didSave), as a
   *  WorkspaceEdit followed by a save does in VS Code. false when the file is not open. */
  async replaceAndSave(relative: string, text: string): Promise<boolean> {
    const uri = pathToFileURL(path.join(this.root, relative)).toString();
    const buffer = this.buffers.get(uri);
    if (!buffer) {
      return false;
    }
    buffer.doc = TextDocument.create(uri, 'plaintext', buffer.doc.version + 1, text);
    await this.connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: buffer.doc.version },
      contentChanges: [{ text }],
    });
    await buffer.save();
    await this.connection.sendNotification('textDocument/didSave', { textDocument: { uri } });
    return true;
  }

  /** workspace/applyEdit as VS Code applies it: into the open buffers (marking them dirty), checked by version. */
  private async applyEdit(edit: { documentChanges?: TextDocumentEditLike[] }): Promise<{ applied: boolean; failureReason?: string }> {
    this.beforeApplyEdit?.(edit);
    const changes = edit.documentChanges ?? [];
    for (const change of changes) {
      const buffer = this.buffers.get(change.textDocument.uri);
      if (!buffer) {
        return { applied: false, failureReason: 'document not open' };
      }
      if (change.textDocument.version !== null && change.textDocument.version !== buffer.doc.version) {
        return { applied: false, failureReason: 'version mismatch' };
      }
    }
    for (const change of changes) {
      const buffer = this.buffers.get(change.textDocument.uri);
      if (!buffer) {
        continue;
      }
      const text = TextDocument.applyEdits(buffer.doc, change.edits);
      buffer.doc = TextDocument.create(buffer.uri, 'plaintext', buffer.doc.version + 1, text);
      buffer.dirty = true;
      await this.connection.sendNotification('textDocument/didChange', {
        textDocument: { uri: buffer.uri, version: buffer.doc.version },
        contentChanges: [{ text }],
      });
    }
    return { applied: true };
  }

  /** Change the VS Code settings: pushed to the server as the extension does (the plan must be a push). */
  async changeSettings(userSettings: Record<string, unknown>): Promise<void> {
    this.settings = serverSettings((key) => userSettings[key]);
    const plan = this.sync.plan(this.settings);
    if (plan.kind !== 'push') {
      throw new Error(`the extension would restart the server here (cleared: ${plan.removed.join(', ')})`);
    }
    await this.connection.sendNotification('workspace/didChangeConfiguration', plan.params);
  }

  /** Event types of one generation, in arrival order. */
  eventTypes(generation: string): string[] {
    return this.events.filter((e) => e.generation === generation).map((e) => e.event.type);
  }

  /** Resolve when an event matching `predicate` has arrived. */
  async waitForEvent(predicate: (e: EventParams) => boolean, what: string, timeoutMs = TIMEOUT_MS): Promise<EventParams> {
    return this.waitFor(() => this.events.find(predicate), what, timeoutMs);
  }

  async waitFor<T>(probe: () => T | undefined | false, what: string, timeoutMs = TIMEOUT_MS): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined && value !== false) {
        return value;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async stop(): Promise<void> {
    try {
      await withTimeout(this.connection.sendRequest('shutdown'), 'shutdown', 10_000);
      await this.connection.sendNotification('exit');
    } catch {
      // the process is killed below
    }
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
    this.client.detach();
    this.connection.dispose();
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

export function withTimeout<T>(promise: Promise<T>, what: string, timeoutMs = TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
