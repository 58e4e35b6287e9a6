// The composer's context and commands, on the extension side: answers the webview's `@` queries
// with files (workspace.findFiles, bounded), symbols (the workspace symbol provider), the selection,
// the problems and the open editors; keeps the chosen items (chips) and hands them over as
// attachments with the next prompt; runs `/` commands instead of sending them to the model.
// The webview half is media/composer.js; the pure rules are in composerModel.ts.

import * as path from 'node:path';

import * as vscode from 'vscode';

import { REWIND_COMMAND } from './rewind.js';

import { CommandIds } from './commands.js';
import {
  attachmentsOf,
  chipRefusal,
  enterAction,
  filterItems,
  fuzzyScore,
  sessionDigest,
  slashCommands,
  workspacePromptsAllowed,
} from './composerModel.js';
import type { Attachment, BuiltinSlash, Chip, ContextItem, DigestMessage, SlashCommand } from './composerModel.js';
import { Methods } from './protocol.js';
import { readPromptDir, userPromptsDir, workspacePromptsDir } from './composerPrompts.js';
import { PromptWatch } from './promptWatch.js';
import type { PromptWatcher } from './promptWatch.js';
import { ReviewCommandIds } from './review.js';
import type { WorkspaceTrustState } from './trustState.js';

/** Most workspace files listed for `@` (findFiles' bound): a huge repository stays responsive. */
const MAX_FILES = 5000;
/** Folders whose files nobody means to attach. */
const EXCLUDE = '{**/node_modules/**,**/.git/**,**/.venv/**,**/__pycache__/**,**/dist/**,**/out/**}';
/** How long a file listing is reused between keystrokes. */
const FILES_TTL_MS = 10_000;
/** A symbol provider that does not answer in time is left out of this answer. */
const SYMBOLS_TIMEOUT_MS = 1500;
/** Most problems written into one attachment. */
const MAX_PROBLEMS = 200;
/** Past sessions listed for `@`, and the messages of one read for its digest. */
const MAX_SESSIONS = 20;
const SESSION_MESSAGES = 500;
/** `@` answers whose items can still be picked (the one shown, and a few the user typed past). */
const KEPT_ANSWERS = 5;

export const CHOOSE_MODE_COMMAND = 'lspAgent.chooseMode';

/** Messages of the composer's protocol with the webview (the rest belong to transcriptView.ts). */
type FromWebview =
  | { type: 'contextQuery'; requestId: number; query: string }
  | { type: 'pickContext'; id: string; requestId?: number }
  | { type: 'removeChip'; key: string }
  | { type: 'slashOpen' }
  | { type: 'submit'; text: string }
  | { type: 'ready' };

export interface ComposerOptions {
  /** send a prompt (and its attachments) the way the Enter key always did: run, queue or wait */
  submit: (text: string, attachments: Attachment[]) => Promise<boolean>;
  /** one request to the server (AgentClient.send): past sessions for `@` */
  request: (method: string, params: unknown) => Promise<unknown>;
  /** the session shown now (not offered as a past one) */
  currentSession: () => string | undefined;
  trust: () => WorkspaceTrustState | undefined;
  flash: (message: string) => void;
  warn: (message: string) => void;
}

type Resolver = () => Chip | undefined | Promise<Chip | undefined>;

export class ComposerContext {
  private chips: Chip[] = [];
  private files: { at: number; uris: vscode.Uri[] } | undefined;
  /** how to turn each item of the last answer into a chip (by item id) */
  /**
   * The resolvers of the last answers, by the webview's request id: a pick names the answer it was
   * shown, so a newer query still being gathered (the user typed on) cannot take the item away.
   */
  private readonly answers = new Map<number, Map<string, Resolver>>();
  private commands: SlashCommand[] = [];
  /** where the `/` list goes when a prompt file changes on disk (the webview's, once it is ready) */
  private postCommands: ((message: unknown) => void) | undefined;
  private readonly prompts = new PromptWatch(watchPromptDir, () => {
    if (this.postCommands) {
      void this.refreshCommands(this.postCommands);
    }
  });

  constructor(private readonly o: ComposerOptions) {}

  dispose(): void {
    this.prompts.dispose();
  }

  /** Handle a composer message; false when it is not one (transcriptView.ts handles it). */
  receive(message: { type: string }, post: (message: unknown) => void): boolean {
    const m = message as FromWebview;
    switch (m.type) {
      case 'ready':
        this.postCommands = post;
        void this.refreshCommands(post);
        this.postChips(post);
        return false; // the transcript renders too
      case 'contextQuery':
        void this.query(typeof m.query === 'string' ? m.query.slice(0, 200) : '').then(({ items, resolvers }) => {
          this.answers.delete(m.requestId); // a reloaded webview counts from 1 again: this one is the newest
          this.answers.set(m.requestId, resolvers);
          for (const old of [...this.answers.keys()].slice(0, -KEPT_ANSWERS)) {
            this.answers.delete(old);
          }
          post({ type: 'contextItems', requestId: m.requestId, items });
        });
        return true;
      case 'pickContext':
        void this.pick(m.id, m.requestId, post);
        return true;
      case 'removeChip':
        this.chips = this.chips.filter((c) => c.key !== m.key);
        this.postChips(post);
        return true;
      case 'submit':
        void this.submit(m.text, post);
        return true;
      case 'slashOpen':
        void this.refreshCommands(post);
        return true;
      default:
        return false;
    }
  }

  /** Read the prompt files again (trust or the folders changed) and give the webview the `/` list. */
  async refreshCommands(post: (message: unknown) => void): Promise<void> {
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const allowed = workspacePromptsAllowed(vscode.workspace.isTrusted, this.o.trust());
    // the workspace's directory is watched only while its prompts may be offered at all
    try {
      this.prompts.watch([userPromptsDir(), allowed && root !== undefined ? workspacePromptsDir(root) : undefined]);
    } catch {
      // no watcher (a host without one): the list is still read again each time `/` opens
    }
    const [user, workspace] = await Promise.all([
      readPromptDir(userPromptsDir()),
      allowed && root !== undefined ? readPromptDir(workspacePromptsDir(root), root) : Promise.resolve([]),
    ]);
    this.commands = slashCommands(user, workspace, allowed);
    post({ type: 'slashCommands', commands: this.commands.map((c) => ({ name: c.name, description: c.description })) });
  }

  // --- `@` ------------------------------------------------------------------------------------

  private async query(query: string): Promise<{ items: ContextItem[]; resolvers: Map<string, Resolver> }> {
    const resolvers = new Map<string, Resolver>();
    const items: ContextItem[] = [];
    const add = (item: ContextItem, resolve: Resolver): void => {
      items.push(item);
      resolvers.set(item.id, resolve);
    };
    const special: ContextItem[] = [];
    const editor = vscode.window.activeTextEditor;
    if (editor && !editor.selection.isEmpty && inWorkspace(editor.document.uri)) {
      const where = `${rel(editor.document.uri)}:${editor.selection.start.line + 1}-${editor.selection.end.line + 1}`;
      special.push({ id: 'selection', kind: 'selection', label: 'Selection', detail: where });
      resolvers.set('selection', () => selectionChip());
    }
    const problems = vscode.languages.getDiagnostics().filter(([uri, d]) => d.length > 0 && inWorkspace(uri));
    if (problems.length > 0) {
      const count = problems.reduce((n, [, d]) => n + d.length, 0);
      special.push({ id: 'problems', kind: 'problems', label: 'Problems', detail: `${count} in ${problems.length} file(s)` });
      resolvers.set('problems', () => problemsChip());
    }
    // by their own name only: "@calc" is about files, not the selection that happens to be in calc.py
    items.push(...special.filter((item) => fuzzyScore(query, item.label) !== undefined));

    const open = new Set<string>();
    const editors: ContextItem[] = [];
    const editorUris = new Map<string, vscode.Uri>();
    for (const tab of vscode.window.tabGroups.all.flatMap((g) => g.tabs)) {
      if (tab.input instanceof vscode.TabInputText && inWorkspace(tab.input.uri) && !open.has(rel(tab.input.uri))) {
        const path = rel(tab.input.uri);
        open.add(path);
        editors.push({ id: `editor:${path}`, kind: 'editor', label: basename(path), detail: dirname(path) ? `open · ${dirname(path)}` : 'open' });
        editorUris.set(`editor:${path}`, tab.input.uri);
      }
    }
    for (const item of filterItems(editors, query, 10)) {
      const uri = editorUris.get(item.id);
      if (uri) {
        add(item, () => fileChip(uri, 'editor'));
      }
    }

    const fileItems = (await this.workspaceFiles())
      .map((uri) => rel(uri))
      .filter((p) => !open.has(p))
      .map((p): ContextItem => ({ id: `file:${p}`, kind: 'file', label: basename(p), detail: dirname(p) }));
    for (const item of filterItems(fileItems, query, 30)) {
      const path = item.id.slice('file:'.length);
      add(item, () => ({ key: `file:${path}`, kind: 'file', label: path, attachment: { type: 'file', path } }));
    }

    for (const symbol of (await workspaceSymbols(query)).slice(0, 20)) {
      const path = rel(symbol.location.uri);
      const line = symbol.location.range.start.line + 1;
      const kind = vscode.SymbolKind[symbol.kind];
      add({ id: `symbol:${path}:${line}:${symbol.name}`, kind: 'symbol', label: symbol.name, detail: `${kind} · ${path}:${line}` }, () => ({
        key: `symbol:${path}:${line}:${symbol.name}`,
        kind: 'symbol',
        label: `${symbol.name} (${path}:${line})`,
        attachment: {
          type: 'text',
          name: `symbol ${symbol.name}`,
          text: `${kind} ${symbol.name}${symbol.containerName ? ` in ${symbol.containerName}` : ''}, defined in ${path} at line ${line} (read it with read_file)`,
        },
      }));
    }
    for (const session of filterItems(await this.pastSessions(), query, 5)) {
      const sessionID = session.id.slice('session:'.length);
      add(session, () => this.sessionChip(sessionID, session.label));
    }
    return { items, resolvers };
  }

  /** The workspace's recent sessions but the current one; none when the server cannot say. */
  private async pastSessions(): Promise<ContextItem[]> {
    try {
      const answer = (await this.o.request(Methods.sessions, { limit: MAX_SESSIONS })) as { sessions?: unknown } | null;
      const sessions = Array.isArray(answer?.sessions) ? (answer.sessions as { sessionID?: unknown; title?: unknown }[]) : [];
      const current = this.o.currentSession();
      return sessions.flatMap((s): ContextItem[] =>
        typeof s.sessionID === 'string' && s.sessionID !== current
          ? [{ id: `session:${s.sessionID}`, kind: 'session', label: typeof s.title === 'string' && s.title ? s.title : s.sessionID, detail: s.sessionID }]
          : [],
      );
    } catch {
      return [];
    }
  }

  private async sessionChip(sessionID: string, title: string): Promise<Chip | undefined> {
    const answer = (await this.o.request(Methods.session, { sessionID, limit: SESSION_MESSAGES })) as { messages?: unknown } | null;
    const messages = Array.isArray(answer?.messages) ? (answer.messages as DigestMessage[]) : [];
    return {
      key: `session:${sessionID}`,
      kind: 'session',
      label: `session ${title.slice(0, 40)}`,
      attachment: { type: 'text', name: `past session ${sessionID}`, text: sessionDigest(title, sessionID, messages) },
    };
  }

  private async workspaceFiles(): Promise<vscode.Uri[]> {
    if (!this.files || Date.now() - this.files.at > FILES_TTL_MS) {
      this.files = { at: Date.now(), uris: await vscode.workspace.findFiles('**/*', EXCLUDE, MAX_FILES) };
    }
    return this.files.uris;
  }

  private async pick(id: string, requestId: unknown, post: (message: unknown) => void): Promise<void> {
    let chip: Chip | undefined;
    try {
      const shown = typeof requestId === 'number' ? this.answers.get(requestId) : [...this.answers.values()].at(-1);
      chip = await shown?.get(id)?.();
    } catch (error) {
      this.o.warn(`LSP Agent: not attached: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (!chip) {
      this.o.flash('LSP Agent: that item is gone; type @ again');
      return;
    }
    const refusal = chipRefusal(this.chips, chip);
    if (refusal) {
      this.o.warn(`LSP Agent: not attached: ${refusal}.`);
      return;
    }
    this.chips = [...this.chips, chip];
    this.postChips(post);
  }

  private postChips(post: (message: unknown) => void): void {
    post({ type: 'chips', chips: this.chips.map((c) => ({ key: c.key, kind: c.kind, label: c.label })) });
  }

  // --- Enter and `/` ---------------------------------------------------------------------------

  private async submit(text: string, post: (message: unknown) => void): Promise<void> {
    const action = enterAction(this.commands, text);
    switch (action.kind) {
      case 'unknown':
        this.o.warn(`LSP Agent: no command /${action.name}. Type / for the list; to send text that starts with /, begin with a space.`);
        return;
      case 'builtin':
        post({ type: 'clearDraft', ifText: text });
        await this.runBuiltin(action.builtin);
        return;
      case 'send':
        await this.send(action.text, post, text);
        return;
    }
  }

  /** `typed`: what the input held (cleared only if it still does); `text`: what is sent. */
  private async send(text: string, post: (message: unknown) => void, typed = text): Promise<void> {
    const attachments = attachmentsOf(this.chips);
    const sent = this.chips;
    if (await this.o.submit(text, attachments)) {
      // only the chips that went: one added while the prompt was being sent stays
      this.chips = this.chips.filter((c) => !sent.includes(c));
      this.postChips(post);
      post({ type: 'clearDraft', ifText: typed });
    }
  }

  private async runBuiltin(builtin: BuiltinSlash): Promise<void> {
    switch (builtin) {
      case 'new':
        await vscode.commands.executeCommand(CommandIds.newSession);
        return;
      case 'compact':
        await vscode.commands.executeCommand(CommandIds.compactContext);
        return;
      case 'review':
        await vscode.commands.executeCommand(ReviewCommandIds.review);
        return;
      case 'sessions':
        await vscode.commands.executeCommand(CommandIds.openSession);
        return;
      case 'rewind':
        await vscode.commands.executeCommand(REWIND_COMMAND);
        return;
      case 'model':
        await this.runIfThere(CommandIds.chooseModel, 'Choosing a model');
        return;
      case 'mode':
        await this.runIfThere(CHOOSE_MODE_COMMAND, 'Modes');
        return;
    }
  }

  /** The model picker and modes come from their own module; until it is there, say so. */
  private async runIfThere(id: string, what: string): Promise<void> {
    const known = await vscode.commands.getCommands(true);
    if (known.includes(id)) {
      await vscode.commands.executeCommand(id);
    } else {
      this.o.flash(`LSP Agent: ${what} is not available yet`);
    }
  }
}

// --- what an item becomes ---------------------------------------------------------------------

function inWorkspace(uri: vscode.Uri): boolean {
  return vscode.workspace.getWorkspaceFolder(uri) !== undefined;
}

function rel(uri: vscode.Uri): string {
  return vscode.workspace.asRelativePath(uri, false);
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function dirname(path: string): string {
  const at = path.lastIndexOf('/');
  return at < 0 ? '' : path.slice(0, at);
}

function fileChip(uri: vscode.Uri, kind: 'file' | 'editor'): Chip {
  const path = rel(uri);
  return { key: `file:${path}`, kind, label: path, attachment: { type: 'file', path } };
}

/** The selection as it is when picked (the user may select something else before sending). */
function selectionChip(): Chip | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.selection.isEmpty) {
    return undefined;
  }
  const { start, end } = editor.selection;
  const where = `${rel(editor.document.uri)}:${start.line + 1}-${end.line + 1}`;
  return {
    key: `selection:${where}`,
    kind: 'selection',
    label: `selection ${where}`,
    attachment: { type: 'text', name: `selection ${where}`, text: editor.document.getText(editor.selection) },
  };
}

function problemsChip(): Chip | undefined {
  const lines: string[] = [];
  for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
    if (!inWorkspace(uri)) {
      continue;
    }
    for (const d of diagnostics) {
      const severity = vscode.DiagnosticSeverity[d.severity].toLowerCase();
      // one line each: a message's own line breaks must not look like further problems
      lines.push(`${rel(uri)}:${d.range.start.line + 1}:${d.range.start.character + 1}: ${severity}: ${d.message.replace(/\s+/g, ' ')}`);
    }
  }
  if (lines.length === 0) {
    return undefined;
  }
  const shown = lines.slice(0, MAX_PROBLEMS);
  if (lines.length > shown.length) {
    shown.push(`… and ${lines.length - shown.length} more`);
  }
  return { key: 'problems', kind: 'problems', label: `problems (${lines.length})`, attachment: { type: 'text', name: 'problems', text: shown.join('\n') } };
}

/**
 * A watcher on the `*.md` files of one prompts directory. Inside the workspace folder the pattern is
 * relative to the folder, so the folder's own watcher serves it even before the directory exists.
 */
function watchPromptDir(dir: string): PromptWatcher {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const below = folder ? relativeInside(folder.uri.fsPath, dir) : undefined;
  const pattern = folder && below !== undefined ? new vscode.RelativePattern(folder, `${below}/*.md`) : new vscode.RelativePattern(vscode.Uri.file(dir), '*.md');
  return vscode.workspace.createFileSystemWatcher(pattern);
}

/** `dir` relative to `root` with forward slashes (a glob's separator), when it lies inside it. */
function relativeInside(root: string, dir: string): string | undefined {
  const rel = path.relative(root, dir);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : undefined;
}

async function workspaceSymbols(query: string): Promise<vscode.SymbolInformation[]> {
  if (query.trim() === '') {
    return [];
  }
  const found = vscode.commands.executeCommand<vscode.SymbolInformation[] | undefined>('vscode.executeWorkspaceSymbolProvider', query);
  const late = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), SYMBOLS_TIMEOUT_MS));
  try {
    const symbols = await Promise.race([Promise.resolve(found), late]);
    return (symbols ?? []).filter((s) => inWorkspace(s.location.uri));
  } catch {
    return [];
  }
}
