// What the one status bar item says: the server's state, idle / running (step k/N) / verified /
// failed / not_run, a missing model, the queued follow-ups and waiting prompts, and that the
// project's config is ignored; its tooltip carries the actions (stop, choose a model, trust).
// Pure.

import type { StopReason, Verification } from './protocol.js';

/** `idle`: not started yet — the server starts with the Agent view, a command, or a workspace with `.lsp-agent/`. */
/** `setup`: not started because no interpreter has lsp-agent yet and the extension can set one up (offered). */
export type ServerState = 'idle' | 'starting' | 'ready' | 'stopped' | 'failed' | 'setup';

export interface StatusFacts {
  server: ServerState;
  running: boolean;
  step: number;
  maxSteps?: number;
  /** the verification status of the session's last generation, when one finished */
  verification?: Verification;
  stopReason?: StopReason;
  queued: number;
  /** prompts typed before the server or the model was there */
  waiting?: number;
  /** the server says no model is configured */
  noModel?: boolean;
  /** what the server ignores of the workspace's own config until it is trusted (empty: nothing) */
  ignored?: readonly string[];
  /** a short note about the last action, shown for a few seconds */
  note?: string;
}

export interface StatusView {
  text: string;
  /** Markdown; its links are `command:` links to the commands in STATUS_LINK_COMMANDS */
  tooltip: string;
  /** a ThemeColor id for the background, for states that need attention */
  background?: 'statusBarItem.errorBackground' | 'statusBarItem.warningBackground';
}

/** The facts from the client's state (fields left out when unknown). */
export function statusFacts(
  server: ServerState,
  state: { running: boolean; step: number; maxSteps?: number; verification?: Verification; stopReason?: StopReason },
  queued: number,
  extra: Pick<StatusFacts, 'waiting' | 'noModel' | 'ignored' | 'note'> = {},
): StatusFacts {
  const facts: StatusFacts = { server, running: state.running, step: state.step, queued, ...extra };
  if (state.maxSteps !== undefined) {
    facts.maxSteps = state.maxSteps;
  }
  if (state.verification !== undefined) {
    facts.verification = state.verification;
  }
  if (state.stopReason !== undefined) {
    facts.stopReason = state.stopReason;
  }
  return facts;
}

const VERIFICATION_ICON: Record<Verification, string> = {
  verified: '$(pass-filled)',
  failed: '$(error)',
  not_run: '$(circle-slash)',
};

/** The commands the tooltip links to (the status bar item trusts exactly these). */
export const STATUS_LINK_COMMANDS = [
  'lspAgent.showTranscript',
  'lspAgent.cancel',
  'lspAgent.chooseModel',
  'lspAgent.openPythonSetting',
  'lspAgent.showLog',
  'lspAgent.restartServer',
  'lspAgent.manageWorkspaceTrust',
  'lspAgent.createManagedEnvironment',
] as const;

/**
 * Text from elsewhere (the server's words about the workspace's config, which the repository
 * writes) shown as literal text: no link, image or HTML of its own in a tooltip whose links run
 * commands.
 */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~$]/g, (c) => `\\${c}`).replace(/\s+/g, ' ');
}

function link(label: string, command: (typeof STATUS_LINK_COMMANDS)[number]): string {
  return `[${label}](command:${command})`;
}

/** The state itself: words, the sentence for the tooltip, its actions and colour. */
function stateView(facts: StatusFacts): { text: string; says: string; actions: string[]; background?: StatusView['background'] } {
  if (facts.server === 'failed') {
    return {
      text: '$(warning) Agent: server failed',
      says: 'The lsp-agent server could not start (see the "LSP Agent" output).',
      actions: [link('Choose the Python interpreter', 'lspAgent.openPythonSetting'), link('Show log', 'lspAgent.showLog'), link('Restart', 'lspAgent.restartServer')],
      background: 'statusBarItem.errorBackground',
    };
  }
  if (facts.server === 'setup') {
    return {
      text: '$(tools) Agent: needs setup',
      says: 'No Python interpreter here has lsp-agent yet. The extension can set one up for you (an environment in its own storage), or choose an interpreter that has it.',
      actions: [link('Set up Python', 'lspAgent.createManagedEnvironment'), link('Choose the Python interpreter', 'lspAgent.openPythonSetting'), link('Show log', 'lspAgent.showLog')],
      background: 'statusBarItem.warningBackground',
    };
  }
  if (facts.server === 'idle') {
    return { text: '$(hubot) Agent: not started', says: 'The lsp-agent server starts when you open the Agent view or run an LSP Agent command.', actions: [link('Show the agent view', 'lspAgent.showTranscript')] };
  }
  if (facts.server === 'starting') {
    return { text: '$(loading~spin) Agent: starting', says: 'Starting the lsp-agent server.', actions: [] };
  }
  if (facts.server === 'stopped') {
    return { text: '$(debug-disconnect) Agent: stopped', says: 'The lsp-agent server is not running.', actions: [link('Restart', 'lspAgent.restartServer')] };
  }
  if (facts.running) {
    const of = facts.maxSteps ? `${facts.step}/${facts.maxSteps}` : String(facts.step);
    return {
      text: `$(sync~spin) Agent: running (step ${of})`,
      says: `A task is running (step ${of}). Steer it, queue a follow-up or stop it.`,
      actions: [link('Stop', 'lspAgent.cancel')],
    };
  }
  if (facts.noModel) {
    return {
      text: '$(warning) Agent: choose a model',
      says: 'No model is configured, so the agent cannot work yet.',
      actions: [link('Choose a model', 'lspAgent.chooseModel')],
      background: 'statusBarItem.warningBackground',
    };
  }
  if (facts.verification) {
    const stop = facts.stopReason ? ` (stop: ${facts.stopReason})` : '';
    return {
      text: `${VERIFICATION_ICON[facts.verification]} Agent: ${facts.verification}`,
      says: `Last run: verification ${facts.verification}${stop}.`,
      actions: [],
      ...(facts.verification === 'failed' ? { background: 'statusBarItem.errorBackground' as const } : {}),
    };
  }
  return { text: '$(circle-outline) Agent: idle', says: 'No run yet in this session.', actions: [] };
}

export function statusView(facts: StatusFacts): StatusView {
  const state = stateView(facts);
  const suffixes: string[] = [];
  const lines = [state.says];
  if (facts.queued > 0) {
    suffixes.push(`${facts.queued} queued`);
  }
  if (facts.waiting) {
    suffixes.push(`${facts.waiting} waiting`);
    lines.push(`${facts.waiting} prompt${facts.waiting === 1 ? '' : 's'} typed before the agent was ready: ${facts.waiting === 1 ? 'it runs' : 'they run'} when it is.`);
  }
  const ignored = facts.ignored ?? [];
  if (ignored.length) {
    suffixes.push('$(shield) project config ignored');
    lines.push(`This workspace's own lsp-agent configuration is ignored until you trust it:\n${ignored.map((e) => `- ${escapeMarkdown(e)}`).join('\n')}`);
  }
  if (facts.note) {
    suffixes.push(facts.note);
  }
  const actions = [link('Show the agent', 'lspAgent.showTranscript'), ...state.actions];
  if (ignored.length) {
    actions.push(link('Manage workspace trust', 'lspAgent.manageWorkspaceTrust'));
  }
  const view: StatusView = {
    text: [state.text, ...suffixes].join(' · '),
    tooltip: `${lines.join('\n\n')}\n\n${actions.join(' · ')} — click the item to show the agent.`,
  };
  if (state.background) {
    view.background = state.background;
  }
  return view;
}
