// Entry point: wires the server, the AgentClient, the views and the commands together. No agent
// logic lives here (or anywhere in the client): the server decides, the client forwards and draws.

import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

import { AgentClient } from './agentClient.js';
import { ApprovalBroker } from './approvalCards.js';
import { ChangeTracker, editedUris } from './changes.js';
import { ComposerContext } from './composer.js';
import { modelChoiceLabel } from './composerModel.js';
import { AgentCommands, CommandIds, INPUT_FOCUS_CONTEXT } from './commands.js';
import type { ItemArg } from './commands.js';
import { createLog } from './log.js';
import { isMethodNotFound } from './rpc.js';
import { ServerManager } from './server.js';
import { classifyChange } from './settings.js';
import { McpCommandIds, McpCommands } from './mcp.js';
import { SkillCommandIds, SkillCommands } from './skills.js';
import { gitOps } from './git.js';
import { REVIEWING_CONTEXT, ReviewCommandIds, ReviewCommands } from './review.js';
import { VscodeHost } from './vscodeHost.js';
import { VscodeReviewEditor } from './views/reviewEditor.js';
import { RESTORE_TO_HERE_COMMAND, REWIND_COMMAND, RewindFlow } from './rewind.js';
import { VscodeRewindUi } from './views/rewindHost.js';
import { QUEUE_VIEW_ID, QueueView } from './views/queueView.js';
import { Readiness, SETUP_CONTEXT, WaitingPrompts, waitingReason } from './readiness.js';
import { StatusBar, currentFacts } from './views/statusBar.js';
import { SETUP_VIEW_ID, SetupView } from './views/setupView.js';
import { TRUST_COMMAND, WorkspaceTrust } from './trust.js';
import { TRANSCRIPT_VIEW_ID, TranscriptView } from './views/transcriptView.js';
import { SET_PROVIDER_KEY, TEST_CONNECTION, ModelsAndKeys } from './models.js';
import { CHOOSE_MODE, MODE_LABELS, Modes } from './modes.js';
import { modelsDeps } from './modelsHost.js';
import { PLAN_READY_CONTEXT, PlanWatch, RUN_PLAN, RUN_PLAN_COMMAND, planPrompt } from './planRun.js';
import { CREATE_ENV_COMMAND, EnvironmentSetup } from './environmentSetup.js';
import type { ModelsResult } from './protocol.gen.js';

const SESSION_KEY = 'lspAgent.sessionID';
const SETTINGS_DEBOUNCE_MS = 750;
/** true while a generation runs (menus show Cancel / Steer Now / Steer With Selection) */
const RUNNING_CONTEXT = 'lspAgent.running';

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = createLog();
  const host = new VscodeHost();
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  const changes = new ChangeTracker(root ? gitOps(root.fsPath) : undefined);
  const agent = new AgentClient({
    log: log.logger,
    beforeRun: () => changes.prepare(),
    revertedByUser: (sessionID, paths) => changes.allReverted(sessionID, paths),
  });
  const server = new ServerManager(agent, log, host);
  server.environments = new EnvironmentSetup({
    extensionPath: context.extensionUri.fsPath,
    extensionVersion: extensionVersion(context),
    // absent only in the stand-in vscode of the unit tests
    storage: (context as { globalStorageUri?: vscode.Uri }).globalStorageUri?.fsPath,
    memory: (context as { globalState?: vscode.Memento }).globalState ?? { get: (): undefined => undefined, update: (): Promise<void> => Promise.resolve() },
    log: log.logger,
    showLog: () => log.channel.show(),
    openPythonSetting: () => vscode.commands.executeCommand(CommandIds.openPythonSetting),
    restart: (reason) => void server.restart(reason),
  });
  server.clientVersion = extensionVersion(context);
  // The server (a Python process) starts when it is needed: the Agent view is opened, a command
  // runs, or the workspace has .lsp-agent/. Until then the icon, the status item and the views are
  // there, and a window on an unrelated folder costs no Python process.
  let started = false;
  const ensureStarted = (reason: string): void => {
    if (!started) {
      started = true;
      void server.restart(reason);
    }
  };
  // Review Changes: the run's writes (events) and the text of open buffers before each applyEdit.
  agent.onAgentEvent((sessionID, event) => changes.observe(sessionID, event));
  server.beforeApplyEdit = (edit: unknown): void => {
    const { sessionID, generation } = agent.snapshot;
    if (!sessionID || !generation) {
      return;
    }
    for (const uri of editedUris(edit)) {
      const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri || d.uri.toString() === vscode.Uri.parse(uri).toString());
      if (document) {
        changes.beforeApplyEdit(sessionID, generation, vscode.workspace.asRelativePath(document.uri, false), document.getText());
      }
    }
  };
  const reviewEditor = new VscodeReviewEditor(() => root);
  manager = server;

  let running = false;
  // Whether a prompt can go now (server up, a model chosen), and the prompts that wait until it can.
  const readiness = new Readiness('idle');
  const waiting = new WaitingPrompts();
  // Workspace trust (trust.ts): VS Code's Restricted Mode first, then the project's own config.
  const trust = new WorkspaceTrust({
    host,
    modal: vscode.window,
    send: (method, params) => agent.send(method, params),
    editorTrusted: () => vscode.workspace.isTrusted,
    memory: context.workspaceState,
    log: log.logger,
  });
  server.onWorkspaceTrustChanged = (params: unknown): void => void trust.onTrustChanged(params);
  // Approval questions: cards in the agent view; a notification only while the view is hidden.
  const approvals = new ApprovalBroker({
    viewVisible: () => transcript.visible,
    notify: (message, labels) => vscode.window.showWarningMessage(message, ...labels),
    reveal: (id) => void transcript.revealApproval(id),
  });
  server.approvals = approvals;
  // The composer's `@` context and `/` commands; Enter's prompt goes through it with its chips.
  const composer: ComposerContext = new ComposerContext({
    submit: (text, attachments) => cmds.submit(text, attachments),
    request: (method, params) => agent.send(method, params),
    currentSession: () => agent.snapshot.sessionID,
    trust: () => trust.state,
    flash: (message) => host.flash(message),
    warn: (message) => void host.showWarning(message),
  });
  // The view calls back into the commands only after both exist (on the user's Enter).
  const transcript: TranscriptView = new TranscriptView(
    context.extensionUri,
    agent,
    host,
    () => currentFacts(agent, readiness, waiting, trust),
    () => ({ items: waiting.items, reason: waitingReason(readiness.setup) }),
    (text: string): Promise<boolean> => cmds.submit(text),
    approvals,
    composer,
  );
  const cmds: AgentCommands = new AgentCommands(host, agent, transcript, log.logger, readiness, waiting);
  const queue = new QueueView(agent);
  const status = new StatusBar(agent, readiness, waiting, trust);
  host.flashTo = (message: string): void => status.flash(message);
  server.onNoModel = (): void => cmds.noModel();
  const setup = new SetupView();
  const openModelSetting = (): Promise<unknown> => cmds.chooseModel();
  const models = new ModelsAndKeys(modelsDeps(context, (method, params) => agent.send(method, params), openModelSetting));
  const modes = new Modes({ ...modelsDeps(context, (method, params) => agent.send(method, params), openModelSetting), memory: { get: (key) => context.workspaceState.get(key), update: async (key, value) => context.workspaceState.update(key, value) } });
  const showModeAndModel = (): void => {
    transcript.setModeLabel(modes.mode === 'agent' ? undefined : `${MODE_LABELS[modes.mode]} mode`);
    const setting = vscode.workspace.getConfiguration('lspAgent').get<string>('model');
    transcript.setChoices(MODE_LABELS[modes.mode], modelChoiceLabel(setting, readiness.setup === 'noModel'));
  };
  modes.onDidChange(showModeAndModel);
  showModeAndModel();
  // A Plan-mode run that ends with a plan: offer to run it in Agent mode — a button under it in the
  // transcript, and a notification only when the view is hidden (as for approvals).
  const plans = new PlanWatch();
  let offeredPlan: string | undefined;
  const offerPlan = (plan: string | undefined): void => {
    offeredPlan = plan;
    transcript.setPlanOffer(plan !== undefined);
    void host.setContext(PLAN_READY_CONTEXT, plan !== undefined);
  };
  const runPlan = async (): Promise<void> => {
    const plan = offeredPlan;
    if (plan === undefined) {
      host.flash('LSP Agent: no plan to run (a Plan-mode run offers one when it ends with it)');
      return;
    }
    offerPlan(undefined); // one plan, one run: a second press does not start it twice
    await modes.switchTo('agent');
    await cmds.submit(planPrompt(plan));
  };
  const planOffers = agent.onAgentEvent((_sessionID, event) => {
    if ((event as { type?: unknown } | null)?.type === 'step_start' && offeredPlan !== undefined) {
      offerPlan(undefined); // another run began: the offer belonged to the one before
    }
    const plan = plans.observe(event, modes.mode);
    if (plan) {
      offerPlan(plan);
      if (!transcript.visible) {
        void vscode.window.showInformationMessage('LSP Agent: the plan is ready.', RUN_PLAN).then((choice) => {
          if (choice === RUN_PLAN) {
            void runPlan();
          }
        });
      }
    }
  });
  context.subscriptions.push(planOffers);

  context.subscriptions.push(
    log.channel,
    log.traceChannel,
    server,
    composer,
    transcript,
    queue,
    status,
    setup,
    reviewEditor,
    { dispose: () => (host.flashTo = undefined) },
    readiness.onDidChange(() => {
      void host.setContext(SETUP_CONTEXT, readiness.setup);
      showModeAndModel();
      transcript.refresh();
      void cmds.flushWaiting();
    }),
    waiting.onDidChange(() => transcript.refresh()),
    approvals.onDidChange(() => transcript.refresh()),
    trust.onDidChange(() => {
      transcript.refresh();
      void composer.refreshCommands((m) => transcript.post(m)); // a workspace's prompts follow its trust
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      status.update();
      // Restart so restricted settings (the interpreter, providers) are read again, now trusted;
      // the new server announces what it ignores and trust.ts asks.
      if (started) {
        void server.restart('workspace trusted in VS Code').then(() => trust.onEditorTrustGranted());
      }
    }),
    changes.onDidChange(() => {
      const run = changes.latest();
      void host.setContext(REVIEWING_CONTEXT, Boolean(run && [...run.files.values()].some((f) => f.state === 'pending')));
    }),
    vscode.window.registerWebviewViewProvider(
      TRANSCRIPT_VIEW_ID,
      {
        resolveWebviewView: (view: vscode.WebviewView): void => {
          ensureStarted('the Agent view was opened');
          transcript.resolveWebviewView(view);
        },
      },
      { webviewOptions: { retainContextWhenHidden: true } },
    ),
    vscode.window.registerTreeDataProvider(SETUP_VIEW_ID, setup),
    server.onDidChangeState((state) => {
      readiness.setServer(state);
      if (state === 'starting') {
        trust.reset();
      }
      if (state === 'ready') {
        void restoreSession(context, agent, log.logger);
        // a new server process holds no key and starts in Agent mode: give it the workspace's again
        void models.sendStoredKeys().catch((error: unknown) => log.logger.warn(`provider keys: ${String(error)}`));
        void modes.restore().catch((error: unknown) => log.logger.warn(`agent/mode: ${String(error)}`));
        void resolvedModel();
      }
    }),
    agent.onDidChange(() => {
      if (running !== agent.snapshot.running) {
        running = agent.snapshot.running;
        void host.setContext(RUNNING_CONTEXT, running);
        if (!running) {
          // Only a running generation asks; a card left from one that ended (the server stopped
          // waiting, e.g. at approvalTimeoutS) must not look answerable.
          approvals.denyAll();
        }
      }
      const sessionID = agent.snapshot.sessionID;
      if (context.workspaceState.get(SESSION_KEY) !== sessionID) {
        void context.workspaceState.update(SESSION_KEY, sessionID);
      }
    }),
  );

  // What the server resolved as the model (all config layers), for the welcome view.
  const resolvedModel = async (): Promise<void> => {
    try {
      readiness.modelResolved((await agent.send<ModelsResult>('agent/models', {})).current);
    } catch (error) {
      log.logger.warn(`agent/models: ${String(error)}`);
    }
  };
  // Commands that need no server do not start one.
  const noServerNeeded = new Set<string>([CommandIds.showLog, CommandIds.openDocs, CommandIds.openPythonSetting, CommandIds.restartServer, CREATE_ENV_COMMAND]);
  const register = (id: string, handler: (...args: never[]) => unknown): void => {
    context.subscriptions.push(
      vscode.commands.registerCommand(id, (...args: never[]) => {
        if (!noServerNeeded.has(id)) {
          ensureStarted(`command ${id}`);
        }
        return handler(...args);
      }),
    );
  };
  register(CommandIds.runTask, () => cmds.runTask());
  register(CommandIds.steer, () => cmds.steer());
  register(CommandIds.steerWithSelection, () => cmds.steerWithSelection());
  register(CommandIds.queueFollowUp, () => cmds.queueFollowUp());
  register(CommandIds.steerNow, () => cmds.steerNow());
  register(CommandIds.sendQueuedNow, (arg: ItemArg) => cmds.sendQueuedNow(arg));
  register(CommandIds.cancel, () => cmds.cancel());
  register(CommandIds.compactContext, () => cmds.compactContext());
  register(CommandIds.newSession, () => cmds.newSession());
  register(CommandIds.queueSteerItem, (arg: ItemArg) => cmds.queueSteerItem(arg));
  register(CommandIds.queueSendNowItem, (arg: ItemArg) => cmds.sendQueuedNow(arg));
  register(CommandIds.queueCancelItem, (arg: ItemArg) => cmds.queueCancelItem(arg));
  register(CommandIds.queueEditItem, (arg: ItemArg) => cmds.queueEditItem(arg));
  register(CommandIds.openSession, () => cmds.openSession());
  const rewind = new RewindFlow(agent, new VscodeRewindUi(host));
  register(REWIND_COMMAND, () => rewind.pickAndRestore());
  register(RESTORE_TO_HERE_COMMAND, (messageID?: string) => (typeof messageID === 'string' ? rewind.restoreTo(messageID) : rewind.pickAndRestore()));
  const review = new ReviewCommands(host, changes, reviewEditor, log.logger);
  register(ReviewCommandIds.review, (generation?: string) => review.review(typeof generation === 'string' ? generation : undefined));
  register(ReviewCommandIds.keep, (path?: string) => review.keep(typeof path === 'string' ? path : undefined));
  register(ReviewCommandIds.revert, (path?: string) => review.revert(typeof path === 'string' ? path : undefined));
  register(CommandIds.showTranscript, () => transcript.focusInput());
  register(CommandIds.showQueue, () => vscode.commands.executeCommand(`${QUEUE_VIEW_ID}.focus`));
  register(CommandIds.showLog, () => log.channel.show());
  register(CommandIds.restartServer, () => ((started = true), server.restart('restart requested')));
  register(CREATE_ENV_COMMAND, () => {
    started = true;
    server.askedForEnv = true;
    return server.restart('managed environment requested');
  });
  const skills = new SkillCommands(host, agent, log.logger);
  register(SkillCommandIds.propose, () => skills.propose());
  register(SkillCommandIds.validate, () => skills.validate());
  register(SkillCommandIds.promote, () => skills.promote());
  register(SkillCommandIds.retire, () => skills.retire());
  register(SkillCommandIds.list, () => skills.list());
  const mcp = new McpCommands(host, agent, log.logger);
  register(McpCommandIds.list, () => mcp.list());
  register(TRUST_COMMAND, () => trust.manage());
  // Without a running server there is nobody to ask for models: the setting opens instead.
  // A model chosen in the picker reaches the server at once, not after the settings' debounce: the
  // user's next Enter (often the very next key) must run on the model the composer now shows.
  let pushTimer: NodeJS.Timeout | undefined;
  const pushSettingsNow = async (): Promise<void> => {
    clearTimeout(pushTimer);
    await server.applySettings(agent.snapshot.running);
    readiness.modelMaybeSet();
  };
  register(CommandIds.chooseModel, () =>
    server.state === 'ready'
      ? models.chooseModel().then((name) => (name !== undefined ? pushSettingsNow() : undefined))
      : cmds.chooseModel(),
  );
  register(SET_PROVIDER_KEY, (provider?: string) => models.setProviderKey(typeof provider === 'string' ? provider : undefined));
  register(TEST_CONNECTION, (provider?: string) => models.testConnection(typeof provider === 'string' ? provider : undefined));
  register(CHOOSE_MODE, () => modes.chooseMode());
  register(RUN_PLAN_COMMAND, () => runPlan());
  register(CommandIds.openPythonSetting, () => cmds.openPythonSetting());
  register(CommandIds.sendWaiting, () => cmds.sendWaiting());
  register(CommandIds.withdrawWaiting, (id?: string) => cmds.withdrawWaiting(id));
  // The guide that ships inside the extension, so it opens offline and in any remote.
  register(CommandIds.openDocs, () =>
    vscode.commands.executeCommand('markdown.showPreview', vscode.Uri.joinPath(context.extensionUri, 'README.md')),
  );

  // Settings: a new interpreter (or capability) needs a new process; the rest goes to the running server.
  let restartTimer: NodeJS.Timeout | undefined;
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('lspAgent.model')) {
        showModeAndModel();
      }
      const change = classifyChange((section) => event.affectsConfiguration(section));
      if (change.restart && started) {
        clearTimeout(restartTimer);
        restartTimer = setTimeout(() => void server.restart('a setting read at start changed (lspAgent.python or lspAgent.editorQueries.enabled)'), SETTINGS_DEBOUNCE_MS);
      } else if (change.push) {
        clearTimeout(pushTimer);
        pushTimer = setTimeout(
          () =>
            void server
              .applySettings(agent.snapshot.running)
              // a model (or its provider) may be set now: prompts waiting for one are tried again, after the push
              .then(() => readiness.modelMaybeSet())
              .catch((e: unknown) => log.logger.error(String(e))),
          SETTINGS_DEBOUNCE_MS,
        );
      }
    }),
    { dispose: () => (clearTimeout(restartTimer), clearTimeout(pushTimer)) },
  );
  // A model named in .lsp-agent/config.toml (not only in the VS Code setting) clears the welcome's "choose a model".
  if (root) {
    let modelTimer: NodeJS.Timeout | undefined;
    const watcher = vscode.workspace.createFileSystemWatcher('**/.lsp-agent/config.toml');
    const recheck = (): void => {
      clearTimeout(modelTimer);
      modelTimer = setTimeout(() => void (server.state === 'ready' ? resolvedModel() : undefined), SETTINGS_DEBOUNCE_MS * 2);
    };
    context.subscriptions.push(watcher, watcher.onDidChange(recheck), watcher.onDidCreate(recheck), { dispose: () => clearTimeout(modelTimer) });
  }

  await host.setContext(INPUT_FOCUS_CONTEXT, false);
  await host.setContext(RUNNING_CONTEXT, false);
  await host.setContext(REVIEWING_CONTEXT, false);
  await host.setContext(SETUP_CONTEXT, readiness.setup);
  // VS Code activates the extension at startup (the activity bar icon and the status item are
  // there for a new user) but the server starts here only for a workspace that uses lsp-agent;
  // one with .lsp-agent/ but no config.toml is not told about a missing interpreter in a
  // notification nobody asked for: the status item and the welcome view say it.
  if (root !== undefined && fs.existsSync(path.join(root.fsPath, '.lsp-agent'))) {
    started = true;
    const configured = fs.existsSync(path.join(root.fsPath, '.lsp-agent', 'config.toml'));
    void server.restart('activation: the workspace has .lsp-agent/', { quiet: !configured });
  }
}

/** The extension's version from its manifest (the server's must match it). */
function extensionVersion(context: vscode.ExtensionContext): string | undefined {
  const version = (context.extension as vscode.Extension<unknown> | undefined)?.packageJSON as { version?: unknown } | undefined;
  return typeof version?.version === 'string' ? version.version : undefined;
}

/** After (re)start: continue the session this workspace used last, and load its queue. */
async function restoreSession(context: vscode.ExtensionContext, agent: AgentClient, log: { info(m: string): void; warn(m: string): void }): Promise<void> {
  const stored = agent.snapshot.sessionID ?? context.workspaceState.get<string>(SESSION_KEY);
  if (!stored) {
    return;
  }
  agent.useSession(stored);
  try {
    await agent.refreshStatus();
    if (agent.snapshot.sessionID) {
      await agent.queueList();
    }
  } catch (error) {
    if (isMethodNotFound(error)) {
      log.info('this server has no follow-up queue yet');
    } else {
      log.warn(`could not restore session ${stored}: ${String(error)}`);
    }
  }
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
