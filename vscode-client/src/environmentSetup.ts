// The interpreter the server runs with, as the user meets it: the candidates (interpreter.ts),
// the one-time offer to build the managed environment (managedEnv.ts) when none has lsp-agent,
// the build under a cancellable progress notification with pip's log in the output channel, and
// the classified errors with the button that fixes each.

import * as fs from 'node:fs';
import * as os from 'node:os';

import * as vscode from 'vscode';

import type { Logger } from './agentClient.js';
import { CREATE_ENV_ACTION, NOT_NOW_ACTION, OFFER_KEY, SOURCE_LABELS, chooseInterpreter, offerDecision, offerMessage, pythonExtensionInterpreter } from './interpreter.js';
import type { Candidate, OfferMemory, PythonExtensionApi } from './interpreter.js';
import { buildManagedEnv, carriedWheel, managedEnvChosen, usableManagedPython } from './managedEnv.js';
import { findPython } from './pythonFinder.js';
import { probeInterpreter } from './serverLaunch.js';
import { pythonCommand } from './settings.js';

export const CREATE_ENV_COMMAND = 'lspAgent.createManagedEnvironment';
const OPEN_SETTINGS = 'Open Settings';
const SHOW_LOG = 'Show Log';
const PYTHON_EXTENSION = 'ms-python.python';

export interface SetupContext {
  extensionPath: string;
  /** undefined: not known (no version check) */
  extensionVersion: string | undefined;
  /** the extension's globalStorage directory; undefined: no managed environment is possible */
  storage: string | undefined;
  memory: { get(key: string): unknown; update(key: string, value: unknown): Thenable<unknown> };
  log: Logger;
  showLog(): void;
  openPythonSetting(): Thenable<unknown>;
  /** start the server again (the environment built after an offer is used from then on) */
  restart(reason: string): void;
}

/** `told`: the user has seen the problem already (in the build's own message). `setup`: nothing has
 * lsp-agent yet and a managed environment can be built (it was offered, or the offer was declined). */
export type Chosen = { ok: true; python: string; version: string } | { ok: false; problem: string; told?: boolean; setup?: boolean };

function realpath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  try {
    const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION);
    if (!extension) {
      return undefined;
    }
    return extension.isActive ? extension.exports : await extension.activate();
  } catch {
    return undefined;
  }
}

export class EnvironmentSetup {
  /** one build at a time (a restart and the command may both ask) */
  private building: Promise<Chosen> | undefined;

  constructor(private readonly context: SetupContext) {}

  /**
   * The interpreter to start the server with. `asked`: the user ran the command, so the offer is
   * made (or the build done) even after an earlier "Not Now". `quiet`: nobody asked for this start.
   */
  async choose(options: { root?: string | undefined; pythonSetting: unknown; restricted: boolean; asked?: boolean; quiet?: boolean }): Promise<Chosen> {
    const { root } = options;
    const candidates: Candidate[] = [];
    const fromExtension = await pythonExtensionInterpreter(await pythonExtensionApi(), root ? vscode.Uri.file(root) : undefined);
    if (fromExtension) {
      candidates.push({ source: 'python-extension', python: fromExtension });
    }
    const context = { platform: process.platform, home: os.homedir(), env: process.env, ...(root ? { workspaceFolder: root } : {}) };
    candidates.push({ source: 'setting', python: pythonCommand(options.pythonSetting, context) });
    const wheel = carriedWheel(this.context.extensionPath);
    const storage = this.context.storage;
    const managed = wheel && storage ? usableManagedPython(storage, wheel.file) : undefined;
    if (managed) {
      candidates.push({ source: 'managed', python: managed });
    }
    const choice = await chooseInterpreter({
      candidates,
      probe: (python) => probeInterpreter(python, { env: process.env, ...(root ? { cwd: root } : {}) }),
      extensionVersion: this.context.extensionVersion,
      restricted: options.restricted,
      workspace: root,
      realpath,
      log: (message) => this.context.log.info(message),
    });
    if (choice.kind === 'use') {
      this.context.log.info(`using ${choice.candidate.python} (${choice.candidate.source}), lsp-agent ${choice.version}`);
      if (options.asked && choice.candidate.source !== 'managed') {
        void vscode.window.showInformationMessage(
          `LSP Agent: ${SOURCE_LABELS[choice.candidate.source]} (${choice.candidate.python}) has lsp-agent ${choice.version} and is used; a managed environment is set up only when no interpreter has it.`,
        );
      }
      return { ok: true, python: choice.candidate.python, version: choice.version };
    }
    const fallback: Chosen = choice.fallback
      ? { ok: true, python: choice.fallback.candidate.python, version: choice.fallback.version }
      : { ok: false, problem: choice.problem };
    if (!wheel || !storage) {
      return fallback; // a development build without a carried wheel: the old way
    }
    const settable: Chosen = fallback.ok ? fallback : { ...fallback, setup: true };
    const decision = offerDecision(this.context.memory.get(OFFER_KEY) as OfferMemory, managedEnvChosen(storage), options.asked ?? false);
    // a start nobody asked for does not ask either: the welcome view's button offers it
    if (decision === 'skip' || (decision === 'ask' && options.quiet)) {
      return settable;
    }
    if (decision === 'ask') {
      // The start goes on (failed, or with the mismatched server) while the offer waits for an
      // answer: the status item and the welcome view say what is wrong meanwhile.
      void this.offer(choice.problem, wheel, storage);
      return settable.ok ? settable : { ...settable, told: true }; // the offer gives the reason: no second toast
    }
    return this.build(wheel, storage);
  }

  private async offer(problem: string, wheel: { file: string; version: string }, storage: string): Promise<void> {
    const answer = await vscode.window.showInformationMessage(offerMessage(problem, wheel.version), CREATE_ENV_ACTION, NOT_NOW_ACTION);
    if (answer === NOT_NOW_ACTION) {
      await this.context.memory.update(OFFER_KEY, 'declined');
    }
    if (answer !== CREATE_ENV_ACTION) {
      return; // dismissed: asked again at the next start
    }
    await this.context.memory.update(OFFER_KEY, undefined);
    const built = await this.build(wheel, storage);
    if (built.ok) {
      this.context.restart('the managed environment is ready');
    }
  }

  private build(wheel: { file: string; version: string }, storage: string): Promise<Chosen> {
    this.building ??= this.doBuild(wheel, storage).finally(() => (this.building = undefined));
    return this.building;
  }

  private async doBuild(wheel: { file: string; version: string }, storage: string): Promise<Chosen> {
    const log = this.context.log;
    try {
      fs.mkdirSync(storage, { recursive: true }); // the finder runs its probes in it
    } catch (error) {
      const problem = `could not create ${storage}: ${String(error)}`;
      void vscode.window.showErrorMessage(`LSP Agent: ${problem}.`);
      return { ok: false, problem, told: true };
    }
    const base = await findPython(process.env, storage);
    if (!base.ok) {
      log.error(base.problem);
      void vscode.window.showErrorMessage(`LSP Agent: ${base.problem}.`, OPEN_SETTINGS).then((choice) => {
        if (choice === OPEN_SETTINGS) {
          void this.context.openPythonSetting();
        }
      });
      return { ok: false, problem: base.problem, told: true };
    }
    log.info(`building the managed environment in ${storage} with ${base.python.executable} (${base.python.version}) from ${wheel.file}`);
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'LSP Agent: setting up Python', cancellable: true },
      (progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        return buildManagedEnv({
          storage,
          wheel: wheel.file,
          version: wheel.version,
          basePython: base.python.executable,
          env: process.env,
          onStage: (stage) => progress.report({ message: stage }),
          onLog: (line) => line.trim() && log.info(`pip: ${line}`),
          signal: abort.signal,
        });
      },
    );
    if (result.ok) {
      log.info(`managed environment ready: ${result.python}`);
      return { ok: true, python: result.python, version: wheel.version };
    }
    log.error(result.message);
    if (result.kind === 'cancelled') {
      void vscode.window.showInformationMessage(`LSP Agent: ${result.message}.`);
    } else {
      void vscode.window.showErrorMessage(`LSP Agent: ${result.message}.`, SHOW_LOG).then((choice) => {
        if (choice === SHOW_LOG) {
          this.context.showLog();
        }
      });
    }
    return { ok: false, problem: result.message, told: true };
  }
}
