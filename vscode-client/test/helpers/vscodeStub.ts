// A stand-in for the `vscode` module, just enough to load the real bundle and run activate()
// outside VS Code (which CI cannot download). It records what the extension registers; any API
// it does not model is a harmless no-op proxy.

/* eslint-disable @typescript-eslint/no-unsafe-return, @typescript-eslint/no-explicit-any */

type Listener = (value: unknown) => void;

class EventEmitter {
  private listeners = new Set<Listener>();
  event = (listener: Listener): { dispose(): void } => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(value?: unknown): void {
    for (const listener of this.listeners) {
      listener(value);
    }
  }
  dispose(): void {
    this.listeners.clear();
  }
}

/** Any property is another no-op; calling or constructing one returns another. */
export function noop(): any {
  const target = function () {
    return undefined;
  };
  return new Proxy(target, {
    get: (_t, key) => (key === 'then' ? undefined : key === Symbol.toPrimitive ? () => '' : noop()),
    apply: () => noop(),
    construct: () => noop(),
  });
}

const disposable = { dispose: () => undefined };

export interface StubRecord {
  commands: Map<string, (...args: unknown[]) => unknown>;
  executed: { command: string; args: unknown[] }[];
  contexts: Map<string, unknown>;
  messages: { level: string; text: string }[];
  webviewViews: string[];
  /** the registered webview view providers by view id (a test opens a view by resolving it) */
  webviewProviders: Map<string, { resolveWebviewView(view: unknown): void }>;
  treeViews: string[];
  statusItems: { text: string; command?: string }[];
  contentProviders: string[];
  /** the patterns of the file-system watchers the extension made */
  watchers: unknown[];
}

export function createVscodeStub(
  settings: Record<string, unknown>,
  workspaceFolder: string,
  options: {
    trusted?: boolean;
    workspaceSettings?: Record<string, unknown>;
    /** the button a notification's user presses (default: none, the notification is dismissed) */
    answer?: (text: string, actions: string[]) => string | undefined;
  } = {},
): { vscode: unknown; record: StubRecord } {
  const workspaceSettings = options.workspaceSettings ?? {};
  const record: StubRecord = {
    commands: new Map(),
    executed: [],
    contexts: new Map(),
    messages: [],
    webviewViews: [],
    webviewProviders: new Map(),
    treeViews: [],
    statusItems: [],
    contentProviders: [],
    watchers: [],
  };
  const message = (level: string) => (text: string, ...actions: unknown[]) => {
    record.messages.push({ level, text });
    return Promise.resolve(options.answer?.(text, actions.filter((a): a is string => typeof a === 'string')));
  };
  const channel = () => ({
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
    debug: () => undefined,
    trace: () => undefined,
    append: () => undefined,
    appendLine: () => undefined,
    replace: () => undefined,
    clear: () => undefined,
    show: () => undefined,
    hide: () => undefined,
    dispose: () => undefined,
    name: 'stub',
    logLevel: 0,
    onDidChangeLogLevel: () => disposable,
  });
  const uri = (fsPath: string) => ({ fsPath, path: fsPath, scheme: 'file', toString: () => `file://${fsPath}` });

  const vscode: unknown = new Proxy(
    {
      EventEmitter,
      Disposable: class {
        static from(): typeof disposable {
          return disposable;
        }
        dispose(): void {
          return undefined;
        }
      },
      ThemeIcon: class {
        constructor(readonly id: string) {}
      },
      ThemeColor: class {
        constructor(readonly id: string) {}
      },
      MarkdownString: class {
        isTrusted: unknown = false;
        constructor(
          readonly value: string,
          readonly supportThemeIcons = false,
        ) {}
      },
      TreeItem: class {
        constructor(
          readonly label: string,
          readonly collapsibleState: number,
        ) {}
      },
      RelativePattern: class {
        constructor(
          readonly base: unknown,
          readonly pattern: string,
        ) {}
      },
      StatusBarAlignment: { Left: 1, Right: 2 },
      TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
      // no Python extension (as in code-server here): the interpreter comes from lspAgent.python
      extensions: { getExtension: () => undefined },
      ProgressLocation: { Notification: 15 },
      Uri: { joinPath: (base: { fsPath: string }, ...parts: string[]) => uri([base.fsPath, ...parts].join('/')), parse: (s: string) => uri(s.replace(/^file:\/\//, '')), file: uri },
      window: {
        createOutputChannel: channel,
        createStatusBarItem: () => {
          const item = { text: '', tooltip: undefined as unknown, show: () => undefined, hide: () => undefined, dispose: () => undefined };
          record.statusItems.push(item);
          return item;
        },
        createTreeView: (id: string) => {
          record.treeViews.push(id);
          return { dispose: () => undefined };
        },
        registerTreeDataProvider: (id: string) => {
          record.treeViews.push(id);
          return disposable;
        },
        registerWebviewViewProvider: (id: string, provider: { resolveWebviewView(view: unknown): void }) => {
          record.webviewViews.push(id);
          record.webviewProviders.set(id, provider);
          return disposable;
        },
        setStatusBarMessage: (text: string) => {
          record.messages.push({ level: 'flash', text });
          return disposable;
        },
        showErrorMessage: message('error'),
        showWarningMessage: message('warning'),
        showInformationMessage: message('info'),
        withProgress: (_options: unknown, task: (progress: unknown, token: unknown) => unknown) =>
          task({ report: () => undefined }, { isCancellationRequested: false, onCancellationRequested: () => disposable }),
        showInputBox: () => Promise.resolve('a task'),
        showQuickPick: () => Promise.resolve(undefined),
        activeTextEditor: undefined,
      },
      commands: {
        registerCommand: (id: string, handler: (...args: unknown[]) => unknown) => {
          if (record.commands.has(id)) {
            throw new Error(`command ${id} registered twice`);
          }
          record.commands.set(id, handler);
          return { dispose: () => record.commands.delete(id) };
        },
        executeCommand: (command: string, ...args: unknown[]) => {
          record.executed.push({ command, args });
          if (command === 'setContext') {
            record.contexts.set(String(args[0]), args[1]);
          }
          return Promise.resolve(undefined);
        },
      },
      workspace: {
        workspaceFolders: [{ uri: uri(workspaceFolder), name: 'ws', index: 0 }],
        isTrusted: options.trusted ?? true,
        onDidGrantWorkspaceTrust: () => disposable,
        textDocuments: [],
        getConfiguration: () => ({
          get: (key: string) => workspaceSettings[key] ?? settings[key],
          inspect: (key: string) => ({
            key,
            ...(key in settings ? { globalValue: settings[key] } : {}),
            ...(key in workspaceSettings ? { workspaceValue: workspaceSettings[key] } : {}),
          }),
        }),
        onDidChangeConfiguration: () => disposable,
        registerTextDocumentContentProvider: (scheme: string) => {
          record.contentProviders.push(scheme);
          return disposable;
        },
        asRelativePath: (p: string) => p,
        createFileSystemWatcher: (pattern: unknown) => {
          record.watchers.push(pattern);
          return { onDidCreate: () => disposable, onDidChange: () => disposable, onDidDelete: () => disposable, dispose: () => undefined };
        },
      },
    },
    {
      get: (target, key) => (key in target ? (target as Record<string | symbol, unknown>)[key] : noop()),
    },
  );
  return { vscode, record };
}
