// agent/requestApproval: the server asks before a call its approval policy names (a command under
// "untrusted", a command that would run without a sandbox, an MCP tool that may change things).
// This module reads the question strictly and words it; approvalCards.ts shows it inline. The
// buttons are the options the server offers; malformed params answer `deny`, and the server
// denies by itself when no answer comes within approvalTimeoutS. The "for session" button names
// what it would allow without asking again (`sessionScope`), so a grant is never broader than
// the user read.

import type * as gen from './protocol.gen.js';

export const REQUEST_APPROVAL = 'agent/requestApproval';

export type Decision = gen.RequestApprovalResult['decision'];
/** `sessionScope` is optional here: a server from before it existed sends none (the button then says less). */
export type RequestApprovalParams = Omit<gen.RequestApprovalParams, 'sessionScope'> & { sessionScope?: string | null };
export type RequestApprovalResult = gen.RequestApprovalResult;

export const DECISION_LABELS: Record<Decision, string> = {
  allow_once: 'Allow once',
  allow_session: 'Allow for session',
  deny: 'Deny',
};

const DECISIONS = new Set<string>(Object.keys(DECISION_LABELS));

/** Longest scope shown on the button itself; the whole text is always in the detail. */
export const SCOPE_BUTTON_CHARS = 60;

/** The button of one option: "Allow for session" carries its scope, cut to fit a button. */
export function optionLabel(option: Decision, sessionScope: string | undefined): string {
  if (option !== 'allow_session' || !sessionScope) {
    return DECISION_LABELS[option];
  }
  const flat = sessionScope.replace(/\s+/g, ' ').trim();
  const cut = flat.length > SCOPE_BUTTON_CHARS ? `${flat.slice(0, SCOPE_BUTTON_CHARS - 1)}…` : flat;
  return `${DECISION_LABELS.allow_session}: ${cut}`;
}

export function scopeOf(params: RequestApprovalParams): string | undefined {
  return typeof params.sessionScope === 'string' && params.sessionScope.trim() !== '' ? params.sessionScope : undefined;
}

/** The question read strictly: undefined when it lacks what the user must see; unknown options are dropped (none left: deny only). */
export function parseApproval(params: unknown): RequestApprovalParams | undefined {
  const p = params as Partial<RequestApprovalParams> | null;
  if (!p || typeof p.tool !== 'string' || typeof p.what !== 'string' || typeof p.why !== 'string') {
    return undefined;
  }
  const options = (Array.isArray(p.options) ? p.options : []).filter((o): o is Decision => typeof o === 'string' && DECISIONS.has(o));
  return { ...(p as RequestApprovalParams), options: options.length > 0 ? options : ['deny'] };
}

/** The dialog's text: a one-line question, and the command or diff with the reason as detail. */
export function approvalText(params: RequestApprovalParams): { message: string; detail: string } {
  const subject = params.kind === 'edit' ? 'apply this edit' : params.kind === 'mcp' ? `call the MCP tool ${params.tool}` : `run ${params.tool}`;
  const scope = scopeOf(params);
  const session = scope && params.options.includes('allow_session') ? `\n\n"Allow for session" allows without asking again: ${scope}` : '';
  return {
    message: `LSP Agent wants to ${subject}`,
    detail: `${params.what}\n\nWhy you are asked: ${params.why}${session}`,
  };
}
