// The language client's lifecycle: probe the interpreter, start `python -m lsp_agent serve`,
// hand the connection to the AgentClient, answer agent/saveDocuments and workspace/configuration,
// push settings changes, restart when the interpreter changes.

import * as vscode from 'vscode';
import { CancellationToken, LanguageClient, RevealOutputChannelOn, State, TransportKind } from 'vscode-languageclient/node';
import type { LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';

import { FIX_DIAGNOSTIC_COMMAND, fixPromptLine } from './agentClient.js';
import type { AgentClient } from './agentClient.js';
import { REQUEST_APPROVAL } from './approval.js';
import type { RequestApprovalResult } from './approval.js';
import type { ApprovalBroker } from './approvalCards.js';
import { CommandIds } from './commands.js';
import type { Host } from './host.js';
import type { Log } from './log.js';
import { CONFIG_SECTION, ServerRequests } from './protocol.js';
import type { FixDiagnosticArgs, RunResult } from './protocol.js';
import type { Rpc } from './rpc.js';
import { saveDocuments } from './saveDocuments.js';
import { registerEditorQueries } from './vscodeEditorQueries.js';
import type { OpenDocuments } from './saveDocuments.js';
import { isNoModelMessage } from './readiness.js';
import { serverLaunch } from './serverLaunch.js';
import { SettingsSync, answerConfiguration, serverSettings, userSettingValue } from './settings.js';
import { CREATE_ENV_COMMAND, EnvironmentSetup } from './environmentSetup.js';
import { MANAGE_ENV_ACTION, isVersionMismatchMessage } from './interpreter.js';
import type { Chosen } from './environmentSetup.js';
import type { ServerSettings } from './settings.js';
import type { ServerState } from './status.js';
import { WORKSPACE_TRUST_CHANGED } from './trust.js';

/** A setting's value when the user set it (in any scope), undefined when only the default applies. */
export function readUserSetting(key: string): unknown {
  return userSettingValue(key, vscode.workspace.getConfiguration(CONFIG_SECTION).inspect(key), vscode.workspace.isTrusted);
}

export function currentServerSettings(): ServerSettings {
  return serverSettings(readUserSetting);
}

function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/** VS Code's open documents, for agent/saveDocuments. */
const openDocuments: OpenDocuments = {
  find(uri) {
    const wanted = vscode.Uri.parse(uri);
    return vscode.workspace.textDocuments.find(
      (doc) => doc.uri.toString() === uri || (doc.uri.scheme === 'file' && wanted.scheme === 'file' && doc.uri.fsPath === wanted.fsPath),
    );
  },
};

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private stateValue: ServerState = 'stopped';
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private chain: Promise<void> = Promise.resolve();
  private readonly sync = new SettingsSync();
  /** Told about every workspace/applyEdit before VS Code applies it (Review Changes keeps the before-text). */
  beforeApplyEdit: ((edit: unknown) => void) | undefined;
  /** agent/workspaceTrustChanged: the server ignores the workspace's gated settings (trust.ts asks). */
  onWorkspaceTrustChanged: ((params: unknown) => void) | undefined;
  /** Where agent/requestApproval goes (cards in the agent view); without it every question is denied. */
  approvals: ApprovalBroker | undefined;
  /** The server said no model is configured (its CLI-shaped message is replaced by the client's own). */
  onNoModel: (() => void) | undefined;
  /** Chooses the interpreter and offers the managed environment; without it: the Python extension's or lspAgent.python only. */
  environments: EnvironmentSetup | undefined;
  /** The extension's version, sent at initialize for the server to compare. */
  clientVersion: string | undefined;
  /** The next start comes from the "set up a managed environment" command: build even after "Not Now". */
  askedForEnv = false;
  /** Problems at start are not shown as a notification, only in the status item and the welcome view. */
  private quiet = false;

  constructor(
    private readonly agent: AgentClient,
    private readonly log: Log,
    private readonly host: Host,
  ) {}

  get state(): ServerState {
    return this.stateValue;
  }

  private setState(state: ServerState): void {
    this.stateValue = state;
    this.stateEmitter.fire(state);
  }

  /**
   * Start (or restart) the server; calls are serialised so two restarts never overlap. `quiet`: a
   * start nobody asked for (VS Code started, the workspace has no lsp-agent config) reports a
   * missing interpreter in the status item and the welcome view, not in a notification.
   */
  restart(reason: string, options: { quiet?: boolean } = {}): Promise<void> {
    this.chain = this.chain.then(() => {
      this.quiet = options.quiet ?? false;
      return this.doRestart(reason);
    }).catch((error: unknown) => {
      this.log.logger.error(`restart failed: ${String(error)}`);
    });
    return this.chain;
  }

  stop(): Promise<void> {
    this.chain = this.chain.then(() => this.doStop());
    return this.chain;
  }

  /**
   * Tell the running server about changed settings (they apply to runs started afterwards).
   * A value cleared since the server started needs a restart (SettingsSync.plan): done at once
   * when nothing runs, else offered, so a running task is never killed by a settings edit.
   */
  async applySettings(running: boolean): Promise<void> {
    const client = this.client;
    if (!client || this.stateValue !== 'ready') {
      return;
    }
    const settings = currentServerSettings();
    const plan = this.sync.plan(settings);
    this.log.logger.info(`settings changed: ${JSON.stringify(settings)}`);
    if (plan.kind === 'push') {
      await client.sendNotification('workspace/didChangeConfiguration', plan.params);
      return;
    }
    const cleared = plan.removed.join(', ');
    if (!running) {
      await this.restart(`cleared settings: ${cleared}`);
      return;
    }
    const choice = await this.host.showInfo(
      `LSP Agent: ${cleared} cleared. The server falls back to .lsp-agent/config.toml after a restart, which ends the running task.`,
      'Restart Now',
    );
    if (choice === 'Restart Now') {
      await this.restart(`cleared settings: ${cleared}`);
    }
  }

  /** `announce`: false on the way to a restart, so the view never flashes "not running" in between. */
  private async doStop(announce = true): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.agent.detach();
    this.approvals?.denyAll();
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.logger.warn(`stopping the server: ${String(error)}`);
      }
      await client.dispose().catch(() => undefined);
    }
    if (announce) {
      this.setState('stopped');
    }
  }

  /** The Python extension's, lspAgent.python, or the managed environment (environmentSetup.ts). */
  private chooseInterpreter(root: string | undefined): Promise<Chosen> {
    const options = { root, pythonSetting: readUserSetting('python'), restricted: !vscode.workspace.isTrusted, asked: this.askedForEnv, quiet: this.quiet };
    this.askedForEnv = false;
    // Without the extension's context (no carried wheel, no storage): no version check, no managed environment.
    this.environments ??= new EnvironmentSetup({
      extensionPath: '',
      extensionVersion: undefined,
      storage: undefined,
      memory: { get: () => undefined, update: () => Promise.resolve() },
      log: this.log.logger,
      showLog: () => this.log.channel.show(),
      openPythonSetting: () => vscode.commands.executeCommand(CommandIds.openPythonSetting),
      restart: (why) => void this.restart(why),
    });
    return this.environments.choose(options);
  }

  private async doRestart(reason: string): Promise<void> {
    await this.doStop(false);
    this.setState('starting');
    const root = workspaceRoot();
    this.log.logger.info(`starting the server (${reason})`);
    const chosen = await this.chooseInterpreter(root);
    if (!chosen.ok) {
      this.log.logger.error(chosen.problem);
      this.setState(chosen.setup ? 'setup' : 'failed');
      if (this.quiet || chosen.told) {
        return;
      }
      void this.host.showError(`LSP Agent: ${chosen.problem}`, 'Open Settings', 'Show Log').then((choice) => {
        if (choice === 'Open Settings') {
          // on the tab where lspAgent.python lives (Remote in a remote window): commands.ts
          void vscode.commands.executeCommand(CommandIds.openPythonSetting);
        } else if (choice === 'Show Log') {
          this.log.channel.show();
        }
      });
      return;
    }
    const python = chosen.python;
    this.log.logger.info(`lsp-agent ${chosen.version} found at ${python}`);
    const launch = serverLaunch(python, process.env, root);
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      transport: TransportKind.stdio,
      options: { env: launch.env, ...(launch.cwd ? { cwd: launch.cwd } : {}) },
    };
    const clientOptions: LanguageClientOptions = {
      // Every file is synchronised, so the agent reads unsaved text.
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.log.channel,
      traceOutputChannel: this.log.traceChannel,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // editorTrusted is what VS Code knows of the folder, not a setting: in Restricted Mode the
      // server applies no trust the user stored earlier from another front end.
      initializationOptions: () => ({
        ...this.sync.initializationOptions(currentServerSettings()),
        editorTrusted: vscode.workspace.isTrusted,
        // the server compares it with its own and says so on a mismatch (shown with a button below)
        ...(this.clientVersion ? { clientVersion: this.clientVersion } : {}),
      }),
      middleware: {
        // The fix code action's command goes from VS Code straight to the server: show its prompt
        // line and follow the run it started.
        executeCommand: async (command, args, next) => {
          const result: unknown = await next(command, args);
          if (command === FIX_DIAGNOSTIC_COMMAND && isRunResult(result)) {
            const fix = args[0] as FixDiagnosticArgs;
            this.agent.followStartedRun(result, fixPromptLine(fix, vscode.workspace.asRelativePath(vscode.Uri.parse(fix.uri))));
          }
          return result;
        },
        workspace: {
          handleApplyEdit: (params, next) => {
            // the language client passes no cancellation token here
            try {
              this.beforeApplyEdit?.(params.edit);
            } catch (error) {
              this.log.logger.warn(`keeping the text before an edit: ${String(error)}`);
            }
            return next(params, CancellationToken.None);
          },
          // The server asks for the `lspAgent` section: answer with the mapped settings, not
          // VS Code's raw section (python and trace would be unknown keys to the server).
          configuration: async (params, token, next) => {
            const fallback = await next(params, token);
            const answered = Array.isArray(fallback) ? fallback : [];
            return answerConfiguration(params.items, this.sync.section(currentServerSettings()), (_section, index) => answered[index] ?? null);
          },
        },
      },
      initializationFailedHandler: (error) => {
        this.log.logger.error(`initialize failed: ${String(error)}`);
        return false;
      },
    };
    const client = new LanguageClient(CONFIG_SECTION, 'LSP Agent', serverOptions, clientOptions);
    this.client = client;
    const rpc: Rpc = {
      sendRequest: (method, params) => client.sendRequest(method, params),
      onNotification: (method, handler) => client.onNotification(method, handler),
      onRequest: (method, handler) => client.onRequest(method, handler),
    };
    client.onRequest(ServerRequests.saveDocuments, (params: unknown) => saveDocuments(params, openDocuments));
    // agent/editorQuery: definitions, references, hover... from VS Code's own language features
    registerEditorQueries(client);
    // approval policy: a card in the agent view (approvalCards.ts), a notification only while it is hidden
    client.onRequest(REQUEST_APPROVAL, (params: unknown, token: CancellationToken): Promise<RequestApprovalResult> =>
      this.approvals ? this.approvals.ask(params, token) : Promise.resolve({ decision: 'deny' }),
    );
    client.onNotification(WORKSPACE_TRUST_CHANGED, (params: unknown) => this.onWorkspaceTrustChanged?.(params));
    // Replaces the language client's own window/showMessage handler (registered after initialize,
    // so before the server's first message): the no-model sentence becomes the client's message
    // with a button; every other message is shown as the language client would.
    client.onNotification('window/showMessage', (params: unknown) => this.showMessage(params));
    this.agent.attach(rpc);
    // The language client restarts a crashed server by itself (a few times): follow it.
    client.onDidChangeState((event) => {
      if (this.client !== client) {
        return;
      }
      if (event.newState === State.Stopped) {
        this.agent.detach();
        this.approvals?.denyAll();
        this.setState('stopped');
      } else if (event.newState === State.Running) {
        if (!this.agent.connected) {
          this.agent.attach(rpc);
        }
        this.setState('ready');
      }
    });
    try {
      await client.start();
    } catch (error) {
      this.log.logger.error(`the server did not start: ${String(error)}`);
      this.setState('failed');
      void this.host.showError('LSP Agent: the server did not start; see the "LSP Agent" output.', 'Show Log').then((choice) => {
        if (choice === 'Show Log') {
          this.log.channel.show();
        }
      });
      return;
    }
    if (this.stateValue !== 'ready') {
      this.setState('ready'); // normally already set by the Running state change
    }
  }

  private showMessage(params: unknown): void {
    const { type, message } = (params ?? {}) as { type?: unknown; message?: unknown };
    if (typeof message !== 'string') {
      return;
    }
    if (isNoModelMessage(message) && this.onNoModel) {
      this.log.logger.warn(message);
      this.onNoModel();
      return;
    }
    if (isVersionMismatchMessage(message)) {
      this.log.logger.warn(message);
      void this.host.showWarning(message.replace(/^lsp-agent:/, 'LSP Agent:'), MANAGE_ENV_ACTION).then((choice) => {
        if (choice === MANAGE_ENV_ACTION) {
          void vscode.commands.executeCommand(CREATE_ENV_COMMAND);
        }
      });
      return;
    }
    const show = type === 1 ? vscode.window.showErrorMessage : type === 2 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void show(message);
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
  }
}

function isRunResult(value: unknown): value is RunResult {
  const result = value as Partial<RunResult> | null;
  return typeof result?.sessionID === 'string' && typeof result.generation === 'string';
}
