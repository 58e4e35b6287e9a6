import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { PlanWatch, RUN_PLAN, RUN_PLAN_COMMAND, planOf, planPrompt } from '../../src/planRun.js';
import { renderPlanOffer } from '../../src/transcriptHtml.js';

const text = (t: string): unknown => ({ type: 'text', part: { id: 'p', text: t } });
const FINISH = { type: 'run_finish', stopReason: 'final' };

describe('running a plan', () => {
  it('offers the last message of a Plan-mode run when it is a plan', () => {
    const watch = new PlanWatch();
    assert.equal(watch.observe(text('## Plan\n1. fix ops.py'), 'plan'), undefined);
    assert.equal(watch.observe(FINISH, 'plan'), '## Plan\n1. fix ops.py');
    assert.ok(planPrompt('## Plan\n1. x').endsWith('## Plan\n1. x'));
  });

  it('offers nothing in another mode, for other text, or for a plan a later step replaced', () => {
    const watch = new PlanWatch();
    watch.observe(text('## Plan\n1. x'), 'agent');
    assert.equal(watch.observe(FINISH, 'agent'), undefined);
    watch.observe(text('the answer is 4'), 'plan');
    assert.equal(watch.observe(FINISH, 'plan'), undefined);
    watch.observe(text('## Plan\n1. old'), 'plan');
    watch.observe({ type: 'step_start' }, 'plan');
    assert.equal(watch.observe(FINISH, 'plan'), undefined);
    assert.equal(planOf('## Planet'), undefined);
    assert.equal(planOf(undefined), undefined);
  });

  it('draws the offer as one real button naming the command, and nothing without a plan', () => {
    const html = renderPlanOffer(true);
    assert.match(html, new RegExp(`<button type="button" class="run-plan" data-command="${RUN_PLAN_COMMAND}"[^>]*>${RUN_PLAN}</button>`));
    assert.match(html, /data-key="plan-offer"/, 'a row the arrow keys reach');
    assert.equal(renderPlanOffer(false), '');
  });
});
