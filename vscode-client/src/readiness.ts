// Whether a typed prompt can go to the server now: the server must be up and a model chosen.
// The server has no field that says "no model"; it says so in words, once after start (a
// window/showMessage) and again when agent/run is refused, both with the CLI's sentence. Those
// words are recognised here, so the client can replace them with one message that has a button,
// drive the welcome view, and hold prompts until a model is set. Pure: no `vscode`.

import { errorFacts } from './rpc.js';
import type { ServerState } from './status.js';
import { Listeners } from './listeners.js';

/** What the server knows of the model: `missing` once it said so, `unknown` until then. */
export type ModelState = 'unknown' | 'missing';

/**
 * The value of the `lspAgent.setup` context key (package.json's viewsWelcome and view `when`s):
 * `noServer` — the server did not start (interpreter or lsp-agent missing); `noModel` — the server
 * runs but no model is configured; `starting`; `ready`.
 */
export type SetupState = 'starting' | 'noServer' | 'noModel' | 'ready';

export const SETUP_CONTEXT = 'lspAgent.setup';

export function setupState(server: ServerState, model: ModelState): SetupState {
  if (server === 'failed' || server === 'stopped' || server === 'setup') {
    return 'noServer';
  }
  if (server === 'starting' || server === 'idle') {
    return 'starting';
  }
  return model === 'missing' ? 'noModel' : 'ready';
}

/** The start of the server's sentence (lsp_agent.providers.registry.NO_MODEL), with or without its `lsp-agent: ` prefix. */
const NO_MODEL_PREFIX = /^(?:lsp-agent:\s*)?no model is configured\b/i;

export function isNoModelMessage(text: unknown): boolean {
  return typeof text === 'string' && NO_MODEL_PREFIX.test(text.trim());
}

/** An agent/run refusal because no model is configured (a `config` error with the server's sentence). */
export function isNoModelError(error: unknown): boolean {
  const facts = errorFacts(error);
  return (facts.kind === undefined || facts.kind === 'config') && isNoModelMessage(facts.message);
}

/** The one message shown instead of the server's CLI-shaped text. */
export const NO_MODEL_MESSAGE =
  'LSP Agent: choose a model before the agent can work (lspAgent.model, e.g. "ollama/qwen2.5-coder" or "openai/gpt-4.1"). A prompt you type now waits and runs once it is set.';
export const CHOOSE_MODEL_ACTION = 'Choose a Model';

/** Why a prompt waits, in the words the transcript shows next to it; undefined: it can go now. */
export function waitingReason(setup: SetupState): string | undefined {
  switch (setup) {
    case 'starting':
      return 'waiting for the server to start';
    case 'noServer':
      return 'waiting for the server: it is not running (fix lspAgent.python, then restart it)';
    case 'noModel':
      return 'choose a model to send';
    case 'ready':
      return undefined;
  }
}

// --- which settings page ------------------------------------------------------------------

/** A setting's scope as package.json declares it (only the ones this decision needs). */
export type SettingScope = 'machine' | 'machine-overridable' | 'window' | 'resource';

/**
 * The command that opens the Settings editor on `key`, in the tab where the setting can be
 * edited. In a remote window (code-server, SSH, WSL, Codespaces) the User tab hides machine
 * scoped settings: they live on the Remote tab, and searching the User tab finds nothing.
 */
export function openSettingCommand(key: string, scope: SettingScope, remoteName: string | undefined): { command: string; args: unknown[] } {
  const machine = scope === 'machine' || scope === 'machine-overridable';
  if (machine && remoteName) {
    return { command: 'workbench.action.openRemoteSettings', args: [{ query: key }] };
  }
  return { command: 'workbench.action.openSettings', args: [key] };
}

// --- prompts that wait ---------------------------------------------------------------------

export interface WaitingPrompt {
  id: number;
  text: string;
  /** what the composer attached (composerModel.Attachment), sent with the text */
  attachments?: unknown[];
}

/**
 * Prompts typed while the server or the model is missing, oldest first. They are sent in order
 * when the client is ready; a prompt is removed only once the server took it (or the user
 * withdrew it), so a refusal puts nothing out of sight.
 */
export class WaitingPrompts {
  private list: WaitingPrompt[] = [];
  private counter = 0;
  private readonly listeners = new Listeners();

  get items(): readonly WaitingPrompt[] {
    return this.list;
  }

  add(text: string, attachments: unknown[] = []): WaitingPrompt {
    this.counter += 1;
    const prompt: WaitingPrompt = attachments.length > 0 ? { id: this.counter, text, attachments } : { id: this.counter, text };
    this.list = [...this.list, prompt];
    this.changed();
    return prompt;
  }

  /** Remove one (sent, or withdrawn by the user); false when it was not waiting. */
  remove(id: number): boolean {
    const before = this.list.length;
    this.list = this.list.filter((p) => p.id !== id);
    if (this.list.length !== before) {
      this.changed();
      return true;
    }
    return false;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  private changed(): void {
    this.listeners.fire();
  }
}

// --- the state both come from -----------------------------------------------------------------

/** The server's state and what it said about the model, with a change event (drives the context key and the flush). */
export class Readiness {
  private serverValue: ServerState;
  private modelValue: ModelState = 'unknown';
  private readonly listeners = new Listeners();

  constructor(server: ServerState = 'stopped') {
    this.serverValue = server;
  }

  get server(): ServerState {
    return this.serverValue;
  }

  get model(): ModelState {
    return this.modelValue;
  }

  get setup(): SetupState {
    return setupState(this.serverValue, this.modelValue);
  }

  setServer(state: ServerState): void {
    if (state === this.serverValue) {
      return;
    }
    this.serverValue = state;
    // A new server reads the configuration afresh and says again if a model is missing.
    if (state === 'starting') {
      this.modelValue = 'unknown';
    }
    this.changed();
  }

  /** The server said no model is configured; true when this is news (the caller tells the user once). */
  modelMissing(): boolean {
    if (this.modelValue === 'missing') {
      return false;
    }
    this.modelValue = 'missing';
    this.changed();
    return true;
  }

  /**
   * What the server resolved from every layer (the VS Code setting, .lsp-agent/config.toml, the
   * user's config): a name means a model is there, whatever the VS Code setting says; null means
   * none is. Keeps the welcome view from asking for a model the config files already name.
   */
  modelResolved(current: string | null | undefined): void {
    if (typeof current === 'string' && current.trim() !== '') {
      this.modelMaybeSet();
    } else if (current === null) {
      this.modelMissing();
    }
  }

  /** A model setting changed, or a run was accepted: try again rather than assume it is still missing. */
  modelMaybeSet(): void {
    if (this.modelValue === 'unknown') {
      return;
    }
    this.modelValue = 'unknown';
    this.changed();
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  private changed(): void {
    this.listeners.fire();
  }
}
