import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { statusFacts, statusView } from '../../src/status.js';

describe('statusView', () => {
  it('shows idle before any run', () => {
    assert.equal(statusView(statusFacts('ready', { running: false, step: 0 }, 0)).text, '$(circle-outline) Agent: idle');
  });

  it('shows the step while running, with queued follow-ups', () => {
    const view = statusView(statusFacts('ready', { running: true, step: 3, maxSteps: 40 }, 2));
    assert.equal(view.text, '$(sync~spin) Agent: running (step 3/40) · 2 queued');
  });

  it('shows the verification status of the last run', () => {
    assert.equal(statusView(statusFacts('ready', { running: false, step: 0, verification: 'verified' }, 0)).text, '$(pass-filled) Agent: verified');
    const failed = statusView(statusFacts('ready', { running: false, step: 0, verification: 'failed', stopReason: 'final' }, 0));
    assert.equal(failed.text, '$(error) Agent: failed');
    assert.equal(failed.background, 'statusBarItem.errorBackground');
    assert.match(failed.tooltip, /stop: final/);
    assert.equal(statusView(statusFacts('ready', { running: false, step: 0, verification: 'not_run' }, 0)).text, '$(circle-slash) Agent: not_run');
  });

  it('shows server trouble before anything else, and always says a click opens the transcript', () => {
    const failed = statusView(statusFacts('failed', { running: true, step: 1 }, 0));
    assert.equal(failed.text, '$(warning) Agent: server failed');
    assert.match(failed.tooltip, /show the transcript/);
    assert.equal(statusView(statusFacts('starting', { running: false, step: 0 }, 0)).text, '$(loading~spin) Agent: starting');
    assert.equal(statusView(statusFacts('stopped', { running: false, step: 0 }, 0)).text, '$(debug-disconnect) Agent: stopped');
  });
});
