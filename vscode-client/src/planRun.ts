// Plan mode ends with a message whose first line is `## Plan` (the server tells the model so). When a
// run in Plan mode ends on such a message, the user is offered to run it: back to Agent mode, the plan
// as the next task — by a button under the plan in the transcript (a notification when the view is
// hidden). Only the run's last text counts: a plan the model drafted and then revised is not
// offered in its old form.

import type { ModeId } from './modes.js';

export const RUN_PLAN = 'Run It in Agent Mode';
/** The command behind the transcript's button (and the notification's action). */
export const RUN_PLAN_COMMAND = 'lspAgent.runPlan';
/** Context key: a plan is offered (the palette lists the command only then). */
export const PLAN_READY_CONTEXT = 'lspAgent.planReady';

export function planOf(text: string | undefined): string | undefined {
  const trimmed = text?.trim();
  return trimmed && /^##\s+Plan\b/.test(trimmed) ? trimmed : undefined;
}

export function planPrompt(plan: string): string {
  return `Carry out this plan, step by step, then check the result:\n\n${plan}`;
}

interface EventLike {
  type?: unknown;
  part?: { text?: unknown };
}

export class PlanWatch {
  private lastText: string | undefined;

  /** The plan to offer when `event` ends a run made in Plan mode, else undefined. */
  observe(event: unknown, mode: ModeId): string | undefined {
    const e = (event ?? {}) as EventLike;
    if (e.type === 'text' && typeof e.part?.text === 'string') {
      this.lastText = e.part.text;
    } else if (e.type === 'step_start' || e.type === 'tool_use') {
      this.lastText = undefined; // a later step replaces what came before it
    } else if (e.type === 'run_finish') {
      const plan = mode === 'plan' ? planOf(this.lastText) : undefined;
      this.lastText = undefined;
      return plan;
    }
    return undefined;
  }
}
