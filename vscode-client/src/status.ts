// What the status bar item says: idle / running (step k/N) / verified / failed / not_run, plus
// server trouble and the number of queued follow-ups. Pure.

import type { StopReason, Verification } from './protocol.js';

export type ServerState = 'starting' | 'ready' | 'stopped' | 'failed';

export interface StatusFacts {
  server: ServerState;
  running: boolean;
  step: number;
  maxSteps?: number;
  /** the verification status of the session's last generation, when one finished */
  verification?: Verification;
  stopReason?: StopReason;
  queued: number;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** a ThemeColor id for the background, for states that need attention */
  background?: 'statusBarItem.errorBackground' | 'statusBarItem.warningBackground';
}

/** The facts from the client's state (fields left out when unknown). */
export function statusFacts(
  server: ServerState,
  state: { running: boolean; step: number; maxSteps?: number; verification?: Verification; stopReason?: StopReason },
  queued: number,
): StatusFacts {
  const facts: StatusFacts = { server, running: state.running, step: state.step, queued };
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

export function statusView(facts: StatusFacts): StatusView {
  const queued = facts.queued > 0 ? ` · ${facts.queued} queued` : '';
  const click = 'Click to show the transcript.';
  if (facts.server === 'failed') {
    return {
      text: '$(warning) Agent: server failed',
      tooltip: `The lsp-agent server could not start; see the "LSP Agent" output. ${click}`,
      background: 'statusBarItem.errorBackground',
    };
  }
  if (facts.server === 'starting') {
    return { text: '$(loading~spin) Agent: starting', tooltip: `Starting the lsp-agent server. ${click}` };
  }
  if (facts.server === 'stopped') {
    return { text: '$(debug-disconnect) Agent: stopped', tooltip: `The lsp-agent server is not running. ${click}` };
  }
  if (facts.running) {
    const of = facts.maxSteps ? `${facts.step}/${facts.maxSteps}` : String(facts.step);
    return {
      text: `$(sync~spin) Agent: running (step ${of})${queued}`,
      tooltip: `A generation is running. Steer it, queue a follow-up or cancel it. ${click}`,
    };
  }
  if (facts.verification) {
    const stop = facts.stopReason ? ` (stop: ${facts.stopReason})` : '';
    const view: StatusView = {
      text: `${VERIFICATION_ICON[facts.verification]} Agent: ${facts.verification}${queued}`,
      tooltip: `Last run: verification ${facts.verification}${stop}. ${click}`,
    };
    if (facts.verification === 'failed') {
      view.background = 'statusBarItem.errorBackground';
    }
    return view;
  }
  return { text: `$(circle-outline) Agent: idle${queued}`, tooltip: `No run yet in this session. ${click}` };
}
