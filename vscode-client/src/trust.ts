// Workspace trust on the editor side. The repository is untrusted input: its own `.lsp-agent/`
// settings that start programs, choose endpoints or keys, widen allow-lists or lift limits are
// ignored by the server until the user trusts exactly what they were shown (a hash of those files).
// VS Code's own trust comes first: in Restricted Mode nothing is asked (the user has not even
// trusted the folder to VS Code), only said. Free of `vscode`, so the flows are unit-tested.

import type { Host, PickItem } from './host.js';
import type { MethodName } from './protocol.gen.js';
import { describeError, errorFacts, isMethodNotFound } from './rpc.js';
import { STATE_WORDS, describeState, isIgnoring, trustQuestion, trustState } from './trustState.js';
import type { WorkspaceTrustState } from './trustState.js';
import { Listeners } from './listeners.js';

export type { GatedSetting, TrustStateName, WorkspaceTrustState } from './trustState.js';
export { describeState, isIgnoring, trustQuestion, trustState } from './trustState.js';

export const WORKSPACE_TRUST = 'agent/workspaceTrust' satisfies MethodName;
export const WORKSPACE_TRUST_CHANGED = 'agent/workspaceTrustChanged' satisfies MethodName;

/** The command "LSP Agent: Manage Workspace Trust". */
export const TRUST_COMMAND = 'lspAgent.manageWorkspaceTrust';

export const TRUST_AND_APPLY = 'Trust and apply';
export const NOT_NOW = 'Not now';

/** workspaceState key: the hashes already put to the user (asked once per hash, also across reloads). */
export const ASKED_KEY = 'lspAgent.trust.askedHashes';
const ASKED_KEPT = 20;

/** The part of `vscode.window` the modal needs (a stand-in in tests). */
export interface ModalWindow {
  showWarningMessage(message: string, options: { modal: boolean; detail?: string }, ...items: string[]): PromiseLike<string | undefined>;
}

/** Where the hashes already asked about are kept (VS Code: the extension's workspaceState). */
export interface TrustMemory {
  get(key: string): unknown;
  update(key: string, value: unknown): PromiseLike<void>;
}

export interface TrustLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface WorkspaceTrustOptions {
  host: Host;
  modal: ModalWindow;
  /** one request to the server (AgentClient.send) */
  send: (method: string, params: unknown) => Promise<unknown>;
  /** vscode.workspace.isTrusted: false in Restricted Mode */
  editorTrusted: () => boolean;
  memory: TrustMemory;
  log: TrustLog;
}

interface ManagePick extends PickItem {
  action: 'show' | 'trust' | 'revoke';
}

export class WorkspaceTrust {
  private latest: WorkspaceTrustState | undefined;
  /** restricted-mode notices already shown in this window (by hash) */
  private told = new Set<string>();
  /** hashes put to the user by this window: checked and set before any await, so two
   *  announcements of the same files (a notification and a "show") never open two dialogs */
  private asking = new Set<string>();
  private readonly listeners = new Listeners();

  constructor(private readonly o: WorkspaceTrustOptions) {}

  get state(): WorkspaceTrustState | undefined {
    return this.latest;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  /** A new server connection: nothing is known about it until it says. */
  reset(): void {
    this.latest = undefined;
    this.changed();
  }

  private changed(): void {
    this.listeners.fire();
  }

  private remember(state: WorkspaceTrustState): void {
    this.latest = state;
    this.changed();
  }

  /** agent/workspaceTrustChanged: the server ignores gated settings; ask (once per hash) or say why not. */
  async onTrustChanged(params: unknown): Promise<void> {
    let state: WorkspaceTrustState;
    try {
      state = trustState(params, WORKSPACE_TRUST_CHANGED);
    } catch (error) {
      this.o.log.warn(`ignored ${WORKSPACE_TRUST_CHANGED}: ${String(error)}`);
      return;
    }
    this.remember(state);
    await this.consider(state);
  }

  /** VS Code's trust was just granted (onDidGrantWorkspaceTrust): now the project's own config may be asked about. */
  async onEditorTrustGranted(): Promise<void> {
    const state = await this.show().catch((error: unknown) => {
      this.o.log.warn(`${WORKSPACE_TRUST} show: ${errorFacts(error).message}`);
      return undefined;
    });
    if (state) {
      await this.consider(state);
    }
  }

  private async consider(state: WorkspaceTrustState): Promise<void> {
    if (!this.o.editorTrusted()) {
      await this.tellRestricted(state);
      return;
    }
    if (!isIgnoring(state) || state.hash === null) {
      return;
    }
    const asked = this.askedHashes();
    if (asked.includes(state.hash) || this.asking.has(state.hash)) {
      this.o.log.info(`workspace config ${state.hash.slice(0, 12)} was already put to you; not asking again (LSP Agent: Manage Workspace Trust)`);
      return;
    }
    // Recorded before the dialog shows: a second notification for the same files asks nothing.
    this.asking.add(state.hash);
    await this.o.memory.update(ASKED_KEY, [...asked.filter((h) => h !== state.hash), state.hash].slice(-ASKED_KEPT));
    await this.ask(state);
  }

  private askedHashes(): string[] {
    const stored = this.o.memory.get(ASKED_KEY);
    return Array.isArray(stored) ? stored.filter((h): h is string => typeof h === 'string') : [];
  }

  /** The modal; "Trust and apply" sends exactly the hash that was shown. */
  private async ask(state: WorkspaceTrustState): Promise<void> {
    const { message, detail } = trustQuestion(state);
    let picked: string | undefined;
    try {
      // VS Code adds its own Cancel button to a modal: cancelling is "Not now".
      picked = await this.o.modal.showWarningMessage(message, { modal: true, detail }, TRUST_AND_APPLY, NOT_NOW);
    } catch (error) {
      this.o.log.warn(`the trust dialog failed: ${String(error)}`);
      return;
    }
    if (picked !== TRUST_AND_APPLY || state.hash === null) {
      this.o.host.flash('LSP Agent: the workspace configuration stays ignored (LSP Agent: Manage Workspace Trust to change it)');
      return;
    }
    await this.trust(state.hash);
  }

  private async tellRestricted(state: WorkspaceTrustState): Promise<void> {
    const key = `${state.state}:${state.hash ?? ''}`;
    if (this.told.has(key)) {
      return;
    }
    if (isIgnoring(state)) {
      this.told.add(key);
      await this.o.host.showInfo(
        `LSP Agent: Restricted Mode — this workspace's own lsp-agent configuration is ignored (it would: ${state.gated.map((g) => g.effect).join('; ')}). ` +
          'Trust the folder in VS Code to review it.',
      );
    } else if (state.state === 'trusted' && state.gated.length > 0) {
      // Only an older server (one that ignores initializationOptions.editorTrusted) still applies a
      // trust stored earlier in Restricted Mode: say so, offer to undo.
      this.told.add(key);
      const choice = await this.o.host.showWarning(
        'LSP Agent: VS Code is in Restricted Mode, but you trusted this workspace\'s lsp-agent configuration earlier, so it applies. Revoke that trust?',
        'Revoke',
      );
      if (choice === 'Revoke') {
        await this.run('revoke');
      }
    }
  }

  /** agent/workspaceTrust {action: "show"}. */
  async show(): Promise<WorkspaceTrustState> {
    const state = trustState(await this.o.send(WORKSPACE_TRUST, { action: 'show' }));
    this.remember(state);
    return state;
  }

  /** Trust exactly `hash`; when the files changed since they were shown, show them again and ask. */
  private async trust(hash: string): Promise<void> {
    let state: WorkspaceTrustState;
    try {
      state = trustState(await this.o.send(WORKSPACE_TRUST, { action: 'trust', hash }));
    } catch (error) {
      const facts = errorFacts(error);
      if (facts.kind === 'trust_changed') {
        await this.o.host.showWarning('LSP Agent: the workspace configuration changed since it was shown; here it is again.');
        const fresh = await this.show();
        if (isIgnoring(fresh)) {
          await this.ask(fresh);
        }
        return;
      }
      await this.o.host.showError(`LSP Agent: trusting the workspace failed: ${facts.message}`);
      return;
    }
    this.remember(state);
    this.o.host.flash('LSP Agent: workspace configuration trusted and applied');
  }

  private async run(action: 'show' | 'trust' | 'revoke'): Promise<void> {
    if (action === 'show') {
      await this.o.host.showInfo(describeState(await this.show()));
      return;
    }
    if (action === 'trust') {
      const state = await this.show();
      if (state.state === 'trusted' || state.state === 'nothing_to_trust' || state.hash === null) {
        await this.o.host.showInfo(describeState(state));
        return;
      }
      await this.ask(state);
      return;
    }
    const state = trustState(await this.o.send(WORKSPACE_TRUST, { action: 'revoke' }));
    this.remember(state);
    this.o.host.flash('LSP Agent: workspace trust revoked; its configuration is ignored again');
  }

  /** The command "LSP Agent: Manage Workspace Trust": show / trust / revoke. */
  async manage(): Promise<void> {
    try {
      const state = await this.show();
      const items: ManagePick[] = [{ label: 'Show', description: STATE_WORDS[state.state], action: 'show' }];
      if (isIgnoring(state)) {
        items.push(
          this.o.editorTrusted()
            ? { label: 'Trust and apply…', description: `${state.gated.length} setting(s): shows them first`, action: 'trust' }
            : { label: 'Trust and apply…', description: 'not in Restricted Mode: trust the folder in VS Code first', action: 'trust' },
        );
      }
      if (state.state === 'trusted' || state.state === 'changed') {
        items.push({ label: 'Revoke', description: 'forget the trust; the configuration is ignored again', action: 'revoke' });
      }
      const picked = await this.o.host.quickPick(items, { title: 'LSP Agent: Workspace Trust', placeHolder: state.root });
      if (!picked) {
        return;
      }
      if (picked.action === 'trust' && !this.o.editorTrusted()) {
        await this.o.host.showWarning('LSP Agent: VS Code is in Restricted Mode: trust the folder in VS Code first (Manage Workspace Trust).');
        return;
      }
      await this.run(picked.action);
    } catch (error) {
      if (isMethodNotFound(error)) {
        await this.o.host.showWarning(`LSP Agent: ${describeError('Manage Workspace Trust', error)}`);
        return;
      }
      await this.o.host.showError(`LSP Agent: Manage Workspace Trust failed: ${errorFacts(error).message}`);
    }
  }
}

