// The thin wrapper over the `vscode` API: the few editor services the command logic uses.
// vscodeHost.ts implements it with `vscode`; unit tests implement it with plain objects, so the
// logic modules never import `vscode` (which only exists inside the extension host).

import type { SelectionFacts } from './corrections.js';

export interface PickItem {
  label: string;
  description?: string;
  detail?: string;
}

export interface InputOptions {
  title?: string;
  prompt: string;
  placeHolder?: string;
  value?: string;
}

export interface Host {
  showInfo(message: string, ...actions: string[]): Promise<string | undefined>;
  showWarning(message: string, ...actions: string[]): Promise<string | undefined>;
  showError(message: string, ...actions: string[]): Promise<string | undefined>;
  /** a short note in the status bar that goes away by itself */
  flash(message: string): void;
  inputBox(options: InputOptions): Promise<string | undefined>;
  quickPick<T extends PickItem>(items: T[], options: { title?: string; placeHolder?: string }): Promise<T | undefined>;
  setContext(key: string, value: unknown): Promise<void>;
  /** the active editor's selection (the current line when nothing is selected) */
  activeSelection(): SelectionFacts | undefined;
  executeCommand(command: string, ...args: unknown[]): Promise<unknown>;
  /** the active editor's document: its URI (as a string) and workspace-relative path */
  activeDocument(): DocumentFacts | undefined;
  /** an open-file dialog for one file; its URI as a string, or undefined when cancelled */
  pickFile(options: { title: string; openLabel: string }): Promise<string | undefined>;
  /** the remote's name in a remote window (code-server, SSH, WSL, Codespaces); undefined in a local one */
  remoteName?(): string | undefined;
}

export interface DocumentFacts {
  uri: string;
  path: string;
}

/** The agent input (composer) of the transcript view. */
export interface Composer {
  /** the text typed in the agent input right now ('' when the view is closed) */
  draft(): Promise<string>;
  clearDraft(): void;
  /** put text back into the agent input (a withdrawn waiting prompt) */
  setDraft?(text: string): void;
}
