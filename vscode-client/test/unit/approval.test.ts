import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { SCOPE_BUTTON_CHARS, approvalText, optionLabel, requestApproval } from '../../src/approval.js';
import type { ApprovalWindow } from '../../src/approval.js';
import { createVscodeStub } from '../helpers/vscodeStub.js';

interface Shown {
  message: string;
  options: { modal: boolean; detail?: string };
  items: string[];
}

function window(pick: (items: string[]) => string | undefined | Error): ApprovalWindow & { shown: Shown[] } {
  const shown: Shown[] = [];
  return {
    shown,
    showWarningMessage: (message, options, ...items) => {
      shown.push({ message, options, items });
      const answer = pick(items);
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
}

const PARAMS = {
  sessionID: 'ses_1',
  generation: 'g1',
  callID: 'call_0',
  tool: 'run_command',
  kind: 'command',
  what: "python3 -c 'print(1)'",
  why: 'approvalPolicy is untrusted: every command is approved before it runs',
  reason: 'untrusted',
  options: ['allow_once', 'allow_session', 'deny'],
};

describe('requestApproval', () => {
  it('shows a modal with the command, the reason and one button per option', async () => {
    const ui = window((items) => items[0]);
    assert.deepEqual(await requestApproval(PARAMS, ui), { decision: 'allow_once' });
    const [shown] = ui.shown;
    assert.equal(shown!.message, 'LSP Agent wants to run run_command');
    assert.equal(shown!.options.modal, true);
    assert.match(shown!.options.detail!, /python3 -c 'print\(1\)'/);
    assert.match(shown!.options.detail!, /untrusted/);
    assert.deepEqual(shown!.items, ['Allow once', 'Allow for session', 'Deny']);
  });

  it('maps each button to its decision', async () => {
    assert.deepEqual(await requestApproval(PARAMS, window(() => 'Allow for session')), { decision: 'allow_session' });
    assert.deepEqual(await requestApproval(PARAMS, window(() => 'Deny')), { decision: 'deny' });
  });

  it('denies when the dialog is dismissed, fails, or the params are malformed', async () => {
    assert.deepEqual(await requestApproval(PARAMS, window(() => undefined)), { decision: 'deny' });
    assert.deepEqual(await requestApproval(PARAMS, window(() => new Error('no window'))), { decision: 'deny' });
    const ui = window((items) => items[0]);
    assert.deepEqual(await requestApproval({ tool: 3 }, ui), { decision: 'deny' });
    assert.deepEqual(await requestApproval(null, ui), { decision: 'deny' });
    assert.equal(ui.shown.length, 0);
  });

  it('offers only the options the server sent (unknown ones are dropped)', async () => {
    const ui = window(() => undefined);
    await requestApproval({ ...PARAMS, options: ['allow_once', 'run_anyway', 'deny'] }, ui);
    assert.deepEqual(ui.shown[0]!.items, ['Allow once', 'Deny']);
  });

  it('words edits and MCP tools for what they are', () => {
    assert.equal(approvalText({ ...PARAMS, kind: 'edit', options: [] } as never).message, 'LSP Agent wants to apply this edit');
    assert.equal(approvalText({ ...PARAMS, kind: 'mcp', tool: 'mcp__fs__write', options: [] } as never).message, 'LSP Agent wants to call the MCP tool mcp__fs__write');
  });

  it("with the stand-in vscode module's window: the warning is shown, and no button is a deny", async () => {
    const { vscode, record } = createVscodeStub({}, '/ws');
    const stubWindow = (vscode as { window: ApprovalWindow }).window;
    assert.deepEqual(await requestApproval(PARAMS, stubWindow), { decision: 'deny' });
    assert.deepEqual(record.messages, [{ level: 'warning', text: 'LSP Agent wants to run run_command' }]);
  });

  it('labels "Allow for session" with what it would allow without asking again, and answers allow_session', async () => {
    const scope = 'exactly `python3 -m pytest -q` in run_command';
    const ui = window((items) => items[1]);
    assert.deepEqual(await requestApproval({ ...PARAMS, sessionScope: scope }, ui), { decision: 'allow_session' });
    const [shown] = ui.shown;
    assert.deepEqual(shown!.items, ['Allow once', `Allow for session: ${scope}`, 'Deny']);
    assert.match(shown!.options.detail!, /"Allow for session" allows without asking again: exactly `python3 -m pytest -q` in run_command/);
  });

  it('a long or multi-line scope is cut on the button, whole in the detail', async () => {
    const scope = `exactly \`python3 -c "${'x'.repeat(200)}\nprint(1)"\` in run_command`;
    const label = optionLabel('allow_session', scope);
    assert.ok(label.length <= 'Allow for session: '.length + SCOPE_BUTTON_CHARS, label);
    assert.ok(label.endsWith('…') && !label.includes('\n'));
    const ui = window(() => undefined);
    await requestApproval({ ...PARAMS, sessionScope: scope }, ui);
    assert.ok(ui.shown[0]!.options.detail!.includes(scope));
    assert.equal(ui.shown[0]!.items[1], label);
  });

  it('no scope (an older server) or no allow_session option: the plain labels, no scope line', async () => {
    assert.equal(optionLabel('allow_session', undefined), 'Allow for session');
    assert.equal(optionLabel('allow_once', 'anything'), 'Allow once');
    const ui = window(() => undefined);
    await requestApproval({ ...PARAMS, sessionScope: 'exactly x', options: ['allow_once', 'deny'] }, ui);
    assert.doesNotMatch(ui.shown[0]!.options.detail!, /Allow for session/);
  });
});
