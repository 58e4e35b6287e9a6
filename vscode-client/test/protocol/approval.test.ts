// agent/requestApproval against the real Python server: the client's own handler (the inline
// cards of approvalCards.ts) with a stand-in surface; the button picked decides whether the
// command runs.

import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { REQUEST_APPROVAL } from '../../src/approval.js';
import type { RequestApprovalParams } from '../../src/approval.js';
import { ApprovalBroker } from '../../src/approvalCards.js';
import type { CancellationToken } from 'vscode-jsonrpc';
import { Editor, fixture, serverMethods, workspace } from './harness.js';

const offered = serverMethods().has(REQUEST_APPROVAL);
const TEST = { timeout: 90_000, skip: offered ? false : `this lsp-agent server does not offer ${REQUEST_APPROVAL} yet` };

async function runWith(
  button: string | undefined | ((items: string[]) => string | undefined),
  settings: Record<string, unknown> = {},
): Promise<{ asked: RequestApprovalParams[]; state: Record<string, unknown>; made: boolean }> {
  const root = workspace();
  const editor = await Editor.start(root, { model: 'scripted/demo', script: fixture('approval.json'), approvalPolicy: 'untrusted', ...settings });
  const asked: RequestApprovalParams[] = [];
  // The card's buttons, pressed as soon as it shows (or never, when `button` is undefined: the server's timeout denies).
  const broker: ApprovalBroker = new ApprovalBroker({ viewVisible: () => true, notify: () => Promise.resolve(undefined), reveal: () => undefined });
  broker.onDidChange(() => {
    for (const card of broker.pending) {
      const labels = card.choices.map((c) => c.label);
      const picked = typeof button === 'function' ? button(labels) : button;
      const choice = card.choices.find((c) => c.label === picked);
      if (choice) {
        setImmediate(() => broker.answer(card.id, choice.decision));
      }
    }
  });
  editor.connection.onRequest(REQUEST_APPROVAL, (params: RequestApprovalParams, token: CancellationToken) => {
    asked.push(params);
    return broker.ask(params, token);
  });
  try {
    const started = await editor.client.run('make the file');
    const finish = await editor.client.waitForFinish(started.generation);
    assert.equal(finish.stopReason, 'final');
    const use = editor.events.find((e) => e.generation === started.generation && e.event.type === 'tool_use');
    assert.ok(use, 'a tool_use event');
    const state = (use.event as unknown as { part: { state: Record<string, unknown> } }).part.state;
    return { asked, state, made: existsSync(path.join(root, 'made.txt')) };
  } finally {
    await editor.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

describe('protocol: agent/requestApproval with the real server', () => {
  it('Allow once: the server asked with the command, and it ran', TEST, async () => {
    const { asked, state, made } = await runWith('Allow once');
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.tool, 'run_command');
    assert.match(asked[0]!.what, /^python3 -c/);
    assert.deepEqual(asked[0]!.options, ['allow_once', 'allow_session', 'deny']);
    assert.match(String(state.output), /^OK: exit=0/);
    assert.equal(made, true);
  });

  it('Deny, or no answer before approvalTimeoutS: nothing ran', TEST, async () => {
    for (const [button, settings] of [['Deny', {}], [undefined, { approvalTimeoutS: 1 }]] as const) {
      const { state, made } = await runWith(button, settings);
      assert.equal(state.errorKind, 'denied');
      assert.equal(made, false);
    }
  });

  it('Allow for session: the button names the scope the server sent (exactly this command), and it ran', TEST, async () => {
    let offeredItems: string[] = [];
    const { asked, made } = await runWith((items) => {
      offeredItems = items;
      return items.find((i) => i.startsWith('Allow for session: '));
    });
    assert.match(asked[0]!.sessionScope ?? '', /^exactly `python3 -c .*` in run_command$/);
    assert.ok(offeredItems[1]!.startsWith('Allow for session: exactly `python3 -c '), offeredItems.join(' | '));
    assert.equal(made, true);
  });
});
