// The workspace trust state as the server reports it (agent/workspaceTrust's answer and
// agent/workspaceTrustChanged's params), read strictly, and the words the dialogs use for it. Pure.

import type * as gen from './protocol.gen.js';
import { ProtocolMismatch } from './wire.js';

export type TrustStateName = gen.WorkspaceTrustState['state'];
export type GatedSetting = gen.GatedSettingOut;

/** As the client keeps it: `hash` always present (null when the server has none). */
export type WorkspaceTrustState = Omit<gen.WorkspaceTrustState, 'hash'> & { hash: string | null };

const STATES = new Set<string>(['trusted', 'untrusted', 'changed', 'nothing_to_trust']);

// Line breaks and other control characters (C0, DEL, C1, U+2028/2029).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * The text with its control characters written out (`\x0a`): effects quote the repository's own
 * strings (a command's arguments, a URL, a path), and a line break in one must not add a line of
 * its own to the dialog, e.g. a forged bullet or a reassuring sentence.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

/** Reads a WorkspaceTrustState (agent/workspaceTrust's answer, agent/workspaceTrustChanged's params). */
export function trustState(value: unknown, what = 'agent/workspaceTrust'): WorkspaceTrustState {
  const obj = value as Record<string, unknown> | null;
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new ProtocolMismatch(`${what}: expected an object`);
  }
  if (typeof obj.root !== 'string' || typeof obj.state !== 'string' || !STATES.has(obj.state)) {
    throw new ProtocolMismatch(`${what}: \`root\` and \`state\` (trusted, untrusted, changed, nothing_to_trust) are required`);
  }
  const hash = obj.hash === undefined || obj.hash === null ? null : obj.hash;
  if (hash !== null && typeof hash !== 'string') {
    throw new ProtocolMismatch(`${what}: \`hash\` must be a string or null`);
  }
  const text = (v: unknown): string => (typeof v === 'string' ? printable(v) : '');
  const files = Array.isArray(obj.files) ? obj.files.filter((f): f is string => typeof f === 'string').map(printable) : [];
  const gated = (Array.isArray(obj.gated) ? obj.gated : []).flatMap((g: unknown): GatedSetting[] => {
    const entry = g as Partial<GatedSetting> | null;
    return entry && typeof entry.effect === 'string' ? [{ setting: text(entry.setting), file: text(entry.file), effect: printable(entry.effect) }] : [];
  });
  return { root: printable(obj.root), state: obj.state as TrustStateName, hash, files, gated };
}

/** Settings are being ignored right now (what the status item and the notices are about). */
export function isIgnoring(state: WorkspaceTrustState | undefined): boolean {
  return state !== undefined && (state.state === 'untrusted' || state.state === 'changed') && state.gated.length > 0;
}

/** The effects as the dialogs list them: one bullet each, stable (the server's) order. */
export function effectLines(state: WorkspaceTrustState): string {
  return state.gated.map((g) => `• ${g.effect}`).join('\n');
}

/** The modal's text: what trusting would start or change, and where it comes from. */
export function trustQuestion(state: WorkspaceTrustState): { message: string; detail: string } {
  const again = state.state === 'changed' ? ' changed since you trusted it. It' : '';
  const files = state.files.length > 0 ? state.files.join(', ') : '.lsp-agent/';
  return {
    message: `This workspace's own lsp-agent configuration${again} would:`,
    detail:
      `${effectLines(state)}\n\n` +
      `From ${files} in ${state.root}. Until you trust it, these settings are ignored (the agent works ` +
      'with your own settings). "Trust and apply" trusts exactly these files; a change to them asks again.',
  };
}

/** Each state in a few words (the Manage Workspace Trust menu). */
export const STATE_WORDS: Record<TrustStateName, string> = {
  trusted: 'trusted: the workspace configuration applies',
  untrusted: 'not trusted: the workspace configuration is ignored',
  changed: 'changed since trusted: ignored until you trust it again',
  nothing_to_trust: 'nothing in this workspace needs trust',
};

/** One paragraph for "Show": the state, then what is ignored (or applied). */
export function describeState(state: WorkspaceTrustState): string {
  const effects = state.gated.map((g) => g.effect).join('; ');
  switch (state.state) {
    case 'nothing_to_trust':
      return `LSP Agent: ${state.root} has no configuration that needs trust; nothing is ignored.`;
    case 'trusted':
      return `LSP Agent: the workspace configuration of ${state.root} is trusted and applies${effects ? `: ${effects}` : ''}.`;
    case 'changed':
      return `LSP Agent: the workspace configuration of ${state.root} changed since you trusted it and is ignored: ${effects}.`;
    case 'untrusted':
      return `LSP Agent: the workspace configuration of ${state.root} is not trusted and is ignored: ${effects}.`;
  }
}
