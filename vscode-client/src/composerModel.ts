// What the composer's `@` and `/` do, without `vscode`: fuzzy filtering of context items, chips
// turned into the attachments agent/run and agent/queue/add take, slash-command parsing, and which
// custom prompt commands may be offered. composer.ts gathers the items from VS Code.

import type { WorkspaceTrustState } from './trustState.js';

/** Most attachments one message may carry (the server's MAX_ATTACHMENTS). */
export const MAX_CHIPS = 32;
/** Longest text one chip may carry: the server takes 200,000 characters for prompt and attachments. */
export const MAX_CHIP_TEXT = 50_000;
/** Most items the picker lists at once. */
export const MAX_PICKS = 50;

export type ContextKind = 'file' | 'symbol' | 'selection' | 'problems' | 'editor' | 'session';

/** One entry of the `@` picker. */
export interface ContextItem {
  /** unique within one answer; the webview sends it back when the user picks the item */
  id: string;
  kind: ContextKind;
  label: string;
  /** where it is (a folder, a file and line); shown dimmed */
  detail?: string;
}

/**
 * What the composer's model button says: the model setting when there is one; otherwise whether the
 * server has a model at all (the workspace's own config may name it) or the user must choose one.
 */
export function modelChoiceLabel(setting: string | undefined, noModel: boolean): string {
  const named = setting?.trim();
  if (named) {
    return named;
  }
  return noModel ? 'Choose a model' : 'model from config';
}

/** What the agent/run and agent/queue/add `attachments` entries look like (lsp_agent/core/attachments.py). */
export type Attachment = { type: 'file'; path: string } | { type: 'text'; name: string; text: string };

/** A chosen item, shown as a chip and sent as its attachment. */
export interface Chip {
  key: string;
  kind: ContextKind;
  label: string;
  attachment: Attachment;
}

/**
 * How well `query` matches `text` as a subsequence (case-insensitive); undefined: no match. Higher is
 * better: consecutive letters, letters at a word start (after / . _ - or a case change) and a match
 * in the file name rather than the folders score more; a shorter text wins a tie.
 */
export function fuzzyScore(query: string, text: string): number | undefined {
  const q = query.toLowerCase();
  if (q === '') {
    return 0;
  }
  const t = text.toLowerCase();
  const nameStart = Math.max(text.lastIndexOf('/'), text.lastIndexOf('\\')) + 1;
  let score = 0;
  let at = -1;
  let run = 0;
  for (const ch of q) {
    const found = t.indexOf(ch, at + 1);
    if (found < 0) {
      return undefined;
    }
    run = found === at + 1 ? run + 1 : 0;
    score += 1 + run * 2;
    const prev = found > 0 ? text[found - 1] : '/';
    if (prev === undefined || '/\\._- '.includes(prev) || (text[found] !== t[found] && prev === prev.toLowerCase())) {
      score += 3;
    }
    if (found >= nameStart) {
      score += 1;
    }
    at = found;
  }
  return score * 1000 - text.length;
}

/** The items matching `query`, best first, at most `limit` (ties keep their order). */
export function filterItems<T extends { label: string; detail?: string }>(items: readonly T[], query: string, limit = MAX_PICKS): T[] {
  const scored: { item: T; score: number; index: number }[] = [];
  items.forEach((item, index) => {
    const byLabel = fuzzyScore(query, item.label);
    const byPath = item.detail ? fuzzyScore(query, `${item.detail}/${item.label}`) : undefined;
    const best = Math.max(byLabel ?? -Infinity, byPath === undefined ? -Infinity : byPath - 500);
    if (best !== -Infinity) {
      scored.push({ item, score: best, index });
    }
  });
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  return scored.slice(0, limit).map((s) => s.item);
}

/** Chips as the server takes them, in the order the user chose them. */
export function attachmentsOf(chips: readonly Chip[]): Attachment[] {
  return chips.slice(0, MAX_CHIPS).map((c) => c.attachment);
}

/** Why this chip cannot be added to these (a message for the user); undefined: it can. */
export function chipRefusal(chips: readonly Chip[], chip: Chip): string | undefined {
  if (chips.some((c) => c.key === chip.key)) {
    return `${chip.label} is attached already`;
  }
  if (chips.length >= MAX_CHIPS) {
    return `at most ${MAX_CHIPS} items can be attached to one message`;
  }
  if (chip.attachment.type === 'text' && chip.attachment.text.length > MAX_CHIP_TEXT) {
    return `${chip.label} is ${chip.attachment.text.length.toLocaleString('en-US')} characters; at most ${MAX_CHIP_TEXT.toLocaleString('en-US')} can be attached (attach the file instead)`;
  }
  return undefined;
}

/** The text to show for what travels with a prompt (the transcript's prompt line). */
export function attachmentSummary(attachments: readonly Attachment[]): string {
  return attachments.map((a) => (a.type === 'file' ? a.path : a.name)).join(', ');
}

/** A stored message as agent/session returns it (only what a digest reads). */
export interface DigestMessage {
  role: string;
  parts: readonly { type: string; text?: string }[];
}

/**
 * A past session as one text attachment: what the user asked and what the agent answered (tool
 * calls and their output left out), the newest kept when it is longer than a chip may be.
 */
export function sessionDigest(title: string, sessionID: string, messages: readonly DigestMessage[]): string {
  const turns: string[] = [];
  for (const message of messages) {
    if (message.role !== 'user' && message.role !== 'assistant') {
      continue;
    }
    const text = message.parts.filter((p) => p.type === 'text' && typeof p.text === 'string').map((p) => p.text).join('').trim();
    if (text) {
      turns.push(`${message.role === 'user' ? 'User' : 'Agent'}: ${text}`);
    }
  }
  const head = `Past session "${title.replace(/\s+/g, ' ')}" (${sessionID}):`;
  let body = turns.join('\n\n');
  const room = MAX_CHIP_TEXT - head.length - 40;
  if (body.length > room) {
    body = `[… earlier turns left out]\n${body.slice(body.length - room)}`;
  }
  return `${head}\n${body}`;
}

// --- slash commands ---------------------------------------------------------------------------

export type BuiltinSlash = 'new' | 'compact' | 'review' | 'sessions' | 'model' | 'mode' | 'rewind';

export interface SlashCommand {
  name: string;
  description: string;
  /** a built-in, or a custom prompt (its Markdown) */
  builtin?: BuiltinSlash;
  prompt?: string;
  /** where a custom prompt came from: shown, so a workspace's own commands are recognisable */
  source?: 'user' | 'workspace';
}

export const BUILTIN_SLASH: readonly SlashCommand[] = [
  { name: 'new', builtin: 'new', description: 'start a new session' },
  { name: 'compact', builtin: 'compact', description: "compact the session's context" },
  { name: 'review', builtin: 'review', description: 'review the changes of the last run' },
  { name: 'sessions', builtin: 'sessions', description: 'reopen a past session' },
  { name: 'rewind', builtin: 'rewind', description: 'restore the code, the conversation or both to before a message' },
  { name: 'model', builtin: 'model', description: 'choose the model' },
  { name: 'mode', builtin: 'mode', description: 'choose the mode (Agent, Plan, Ask)' },
];

/** A command name: what follows `/`, and what a prompt file's name may be. */
const NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/**
 * `/name rest…` at the very start of the text; undefined for anything else: a path like `/etc/x`, or
 * text that starts with a space (the way to send a message that begins with `/`).
 */
export function parseSlash(text: string): { name: string; rest: string } | undefined {
  const match = /^\/([A-Za-z0-9][A-Za-z0-9_-]{0,39})(?:\s+([\s\S]*))?$/.exec(text.trimEnd());
  if (!match?.[1]) {
    return undefined;
  }
  return { name: match[1].toLowerCase(), rest: (match[2] ?? '').trim() };
}

/** What Enter does with the text: send it (with its chips), run a built-in, or refuse an unknown `/word`. */
export type EnterAction =
  | { kind: 'send'; text: string }
  | { kind: 'builtin'; builtin: BuiltinSlash }
  | { kind: 'unknown'; name: string };

export function enterAction(commands: readonly SlashCommand[], text: string): EnterAction {
  const slash = parseSlash(text);
  if (!slash) {
    return { kind: 'send', text };
  }
  const command = commands.find((c) => c.name === slash.name);
  if (!command) {
    return { kind: 'unknown', name: slash.name };
  }
  if (command.builtin) {
    return { kind: 'builtin', builtin: command.builtin };
  }
  return { kind: 'send', text: expandPrompt(command.prompt ?? '', slash.rest) };
}

/** The commands whose names start with what was typed after `/` (built-ins first). */
export function slashCompletions(commands: readonly SlashCommand[], typed: string): SlashCommand[] {
  const prefix = typed.replace(/^\//, '').toLowerCase();
  return commands.filter((c) => c.name.startsWith(prefix));
}

/** The prompt a custom command sends: its Markdown with `$ARGUMENTS` replaced, or the words after it appended. */
export function expandPrompt(template: string, rest: string): string {
  if (template.includes('$ARGUMENTS')) {
    return template.split('$ARGUMENTS').join(rest).trim();
  }
  return rest ? `${template.trim()}\n\n${rest}` : template.trim();
}

/** A prompt file as read: its name (without `.md`) and text. */
export interface PromptFile {
  name: string;
  text: string;
}

/** The first line of a prompt file as its description (a leading `# ` dropped), on one line. */
function describePrompt(text: string): string {
  const first = text.split('\n').find((line) => line.trim() !== '') ?? '';
  return first.replace(/^#+\s*/, '').replace(/\s+/g, ' ').slice(0, 80);
}

/**
 * The workspace's own prompt files may be offered: VS Code trusts the folder and the user has not
 * refused (or stopped trusting) its lsp-agent configuration. A cloned repository's prompt is text the
 * user would send with their own authority, so a stranger's file must not appear as a command.
 */
export function workspacePromptsAllowed(editorTrusted: boolean, trust: WorkspaceTrustState | undefined): boolean {
  if (!editorTrusted) {
    return false;
  }
  return trust === undefined || trust.state === 'trusted' || trust.state === 'nothing_to_trust';
}

/**
 * Every command the `/` list offers: the built-ins, then the user's prompt files, then the
 * workspace's only when `workspaceAllowed`. A name already taken (a built-in, or a user's prompt
 * of the same name) keeps its first meaning: a repository cannot redefine `/compact`.
 */
export function slashCommands(user: readonly PromptFile[], workspace: readonly PromptFile[], workspaceAllowed: boolean): SlashCommand[] {
  const out: SlashCommand[] = [...BUILTIN_SLASH];
  const taken = new Set(out.map((c) => c.name));
  const add = (files: readonly PromptFile[], source: 'user' | 'workspace'): void => {
    for (const file of [...files].sort((a, b) => a.name.localeCompare(b.name))) {
      const name = file.name.toLowerCase();
      if (!NAME.test(name) || taken.has(name) || file.text.trim() === '') {
        continue;
      }
      taken.add(name);
      out.push({ name, prompt: file.text, source, description: `${describePrompt(file.text)} (${source === 'user' ? 'your prompt' : 'this workspace'})` });
    }
  };
  add(user, 'user');
  if (workspaceAllowed) {
    add(workspace, 'workspace');
  }
  return out;
}
