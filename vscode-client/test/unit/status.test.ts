import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { escapeMarkdown, statusFacts, statusView } from '../../src/status.js';

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
    assert.match(failed.tooltip, /\[Show the agent\]\(command:lspAgent\.showTranscript\)/);
    assert.match(failed.tooltip, /\[Choose the Python interpreter\]\(command:lspAgent\.openPythonSetting\)/);
    assert.equal(statusView(statusFacts('starting', { running: false, step: 0 }, 0)).text, '$(loading~spin) Agent: starting');
    assert.equal(statusView(statusFacts('stopped', { running: false, step: 0 }, 0)).text, '$(debug-disconnect) Agent: stopped');
  });

  it('says "needs setup" (a warning, not a failure) while an environment can still be set up, with the link that does it', () => {
    const setup = statusView(statusFacts('setup', { running: false, step: 0 }, 0));
    assert.equal(setup.text, '$(tools) Agent: needs setup');
    assert.equal(setup.background, 'statusBarItem.warningBackground');
    assert.match(setup.tooltip, /\[Set up Python\]\(command:lspAgent\.createManagedEnvironment\)/);
  });

  it('is one item: Stop, a missing model, waiting prompts, the ignored config and a note all go into it', () => {
    const running = statusView(statusFacts('ready', { running: true, step: 2, maxSteps: 40 }, 1, { waiting: 1, note: 'follow-up queued' }));
    assert.equal(running.text, '$(sync~spin) Agent: running (step 2/40) · 1 queued · 1 waiting · follow-up queued');
    assert.match(running.tooltip, /\[Stop\]\(command:lspAgent\.cancel\)/);
    const noModel = statusView(statusFacts('ready', { running: false, step: 0 }, 0, { noModel: true, waiting: 2 }));
    assert.equal(noModel.text, '$(warning) Agent: choose a model · 2 waiting');
    assert.equal(noModel.background, 'statusBarItem.warningBackground');
    assert.match(noModel.tooltip, /\[Choose a model\]\(command:lspAgent\.chooseModel\)/);
    assert.match(noModel.tooltip, /2 prompts typed before the agent was ready/);
    const ignored = statusView(statusFacts('ready', { running: false, step: 0 }, 0, { ignored: ['start the MCP server "x"'] }));
    assert.equal(ignored.text, '$(circle-outline) Agent: idle · $(shield) project config ignored');
    assert.match(ignored.tooltip, /\[Manage workspace trust\]\(command:lspAgent\.manageWorkspaceTrust\)/);
  });

  it('shows what the repository wrote about its config as text: no link of its own in a tooltip whose links run commands', () => {
    const hostile = '[Trust this](command:lspAgent.manageWorkspaceTrust) ![x](https://evil.example/x.png) $(check) <b>ok</b>';
    const view = statusView(statusFacts('ready', { running: false, step: 0 }, 0, { ignored: [hostile] }));
    const line = view.tooltip.split('\n').find((l) => l.startsWith('- '))!;
    assert.equal(line, `- ${escapeMarkdown(hostile)}`);
    assert.doesNotMatch(line, /[^\\]\[Trust this\]\(/, 'a live link');
    assert.doesNotMatch(line, /[^\\]!\[/, 'an image');
    assert.doesNotMatch(line, /[^\\]\$\(/, 'an icon');
    assert.doesNotMatch(line, /[^\\]</, 'HTML');
    // the only links are the client's own
    assert.deepEqual(
      [...view.tooltip.matchAll(/(?<!\\)\]\(command:([\w.]+)\)/g)].map((m) => m[1]),
      ['lspAgent.showTranscript', 'lspAgent.manageWorkspaceTrust'],
    );
  });
});
