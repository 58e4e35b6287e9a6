import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { SCOPE_BUTTON_CHARS, approvalText, optionLabel } from '../../src/approval.js';
import { ApprovalBroker, SHOW_CARD, notificationText } from '../../src/approvalCards.js';
import type { ApprovalSurface } from '../../src/approvalCards.js';
import { renderApprovals } from '../../src/transcriptHtml.js';

interface Surface extends ApprovalSurface {
  notified: { message: string; labels: string[] }[];
  revealed: number[];
  visible: boolean;
}

/** The agent view (visible or not) and VS Code's notifications; `pick` answers a notification. */
function surface(visible: boolean, pick: (labels: string[]) => string | undefined | Error = () => undefined): Surface {
  const s: Surface = {
    notified: [],
    revealed: [],
    visible,
    viewVisible: () => s.visible,
    notify: (message, labels) => {
      s.notified.push({ message, labels });
      const answer = pick(labels);
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
    reveal: (id) => s.revealed.push(id),
  };
  return s;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i += 1) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function cancellation(): { isCancellationRequested: boolean; onCancellationRequested(l: () => void): void; cancel(): void } {
  const listeners: (() => void)[] = [];
  const c = {
    isCancellationRequested: false,
    onCancellationRequested: (l: () => void) => void listeners.push(l),
    cancel: () => {
      c.isCancellationRequested = true;
      listeners.forEach((l) => l());
    },
  };
  return c;
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

describe('approvals inline', () => {
  it('a card in the agent view with the command, why, and one button per option saying what it covers; no notification while the view shows', async () => {
    const ui = surface(true);
    const broker = new ApprovalBroker(ui);
    const answer = broker.ask({ ...PARAMS, sessionScope: 'exactly `python3 -c \'print(1)\'` in run_command' });
    const [card] = broker.pending;
    assert.equal(card!.subject, 'run run_command');
    assert.equal(card!.what, "python3 -c 'print(1)'");
    assert.match(card!.why, /untrusted/);
    assert.deepEqual(card!.choices.map((c) => c.label), ['Allow once', "Allow for session: exactly `python3 -c 'print(1)'` in run_command", 'Deny']);
    assert.match(card!.choices[0]!.covers, /only this call/);
    assert.match(card!.choices[1]!.covers, /without asking again for the rest of this session: exactly `python3 -c 'print\(1\)'` in run_command/);
    assert.match(card!.choices[2]!.covers, /does not run/);
    assert.deepEqual(ui.notified, [], 'no notification while the card is on screen');
    assert.equal(broker.answer(card!.id, 'allow_session'), true);
    assert.deepEqual(await answer, { decision: 'allow_session' });
    assert.deepEqual(broker.pending, []);
  });

  it('only the options offered can be answered, and only once', async () => {
    const broker = new ApprovalBroker(surface(true));
    const answer = broker.ask({ ...PARAMS, options: ['allow_once', 'run_anyway', 'deny'] });
    const [card] = broker.pending;
    assert.deepEqual(card!.choices.map((c) => c.decision), ['allow_once', 'deny']);
    assert.equal(broker.answer(card!.id, 'allow_session'), false, 'not offered');
    assert.equal(broker.answer(card!.id, 'run_anyway'), false, 'not a decision');
    assert.equal(broker.answer(card!.id, 'deny'), true);
    assert.equal(broker.answer(card!.id, 'allow_once'), false, 'already answered');
    assert.deepEqual(await answer, { decision: 'deny' });
  });

  it('malformed params are a deny at once, with nothing shown', async () => {
    const ui = surface(false);
    const broker = new ApprovalBroker(ui);
    assert.deepEqual(await broker.ask({ tool: 3 }), { decision: 'deny' });
    assert.deepEqual(await broker.ask(null), { decision: 'deny' });
    assert.deepEqual(broker.pending, []);
    assert.deepEqual(ui.notified, []);
  });

  it('while the view is hidden: a notification with the same choices and "Show"; its button answers', async () => {
    const ui = surface(false, (labels) => labels[0]);
    const broker = new ApprovalBroker(ui);
    assert.deepEqual(await broker.ask(PARAMS), { decision: 'allow_once' });
    assert.deepEqual(ui.notified, [{ message: "LSP Agent wants to run run_command: python3 -c 'print(1)'", labels: ['Allow once', 'Allow for session', 'Deny', SHOW_CARD] }]);
  });

  it('closing the notification is no answer (the card still asks); "Show" reveals the card', async () => {
    const ui = surface(false, () => undefined);
    const broker = new ApprovalBroker(ui);
    const answer = broker.ask(PARAMS);
    await settle();
    assert.equal(broker.pending.length, 1);
    const shown = surface(false, () => SHOW_CARD);
    const other = new ApprovalBroker(shown);
    void other.ask(PARAMS);
    await settle();
    assert.deepEqual(shown.revealed, [other.pending[0]!.id]);
    broker.answer(broker.pending[0]!.id, 'deny');
    assert.deepEqual(await answer, { decision: 'deny' });
  });

  it('a question the server withdraws (its timeout) or a lost connection is a deny, and its card goes', async () => {
    const broker = new ApprovalBroker(surface(true));
    const token = cancellation();
    const withdrawn = broker.ask(PARAMS, token);
    const lost = broker.ask(PARAMS);
    token.cancel();
    assert.deepEqual(await withdrawn, { decision: 'deny' });
    assert.equal(broker.pending.length, 1);
    broker.denyAll();
    assert.deepEqual(await lost, { decision: 'deny' });
    assert.deepEqual(broker.pending, []);
  });

  it('words edits and MCP tools for what they are', () => {
    assert.equal(approvalText({ ...PARAMS, kind: 'edit', options: [] } as never).message, 'LSP Agent wants to apply this edit');
    assert.equal(approvalText({ ...PARAMS, kind: 'mcp', tool: 'mcp__fs__write', options: [] } as never).message, 'LSP Agent wants to call the MCP tool mcp__fs__write');
  });

  it('a long or multi-line scope is cut on the button, whole in what the choice covers', () => {
    const scope = `exactly \`python3 -c "${'x'.repeat(200)}\nprint(1)"\` in run_command`;
    const label = optionLabel('allow_session', scope);
    assert.ok(label.length <= 'Allow for session: '.length + SCOPE_BUTTON_CHARS, label);
    assert.ok(label.endsWith('…') && !label.includes('\n'));
    const broker = new ApprovalBroker(surface(true));
    void broker.ask({ ...PARAMS, sessionScope: scope });
    assert.equal(broker.pending[0]!.choices[1]!.label, label);
    assert.ok(broker.pending[0]!.choices[1]!.covers.includes(scope));
  });

  it('no scope (an older server): the plain label', () => {
    assert.equal(optionLabel('allow_session', undefined), 'Allow for session');
    assert.equal(optionLabel('allow_once', 'anything'), 'Allow once');
  });

  it('the command is text, never a link: not in the notification (VS Code links [x](command:…) there), not in the card', async () => {
    const hostile = "echo '[Allow everything](command:lspAgent.cancel)' <img src=x onerror=alert(1)>";
    const ui = surface(false);
    const broker = new ApprovalBroker(ui);
    void broker.ask({ ...PARAMS, what: hostile, sessionScope: '[x](command:workbench.action.openSettings)' });
    await settle();
    const { message, labels } = ui.notified[0]!;
    // VS Code's link pattern needs `](` with nothing between
    assert.doesNotMatch(message, /\]\(/, message);
    assert.ok(labels.every((l) => !/\]\(/.test(l)), labels.join(' | '));
    assert.ok(message.includes('[Allow everything] (command:lspAgent.cancel)'), 'the text is all there');
    const html = renderApprovals(broker.pending);
    assert.ok(!html.includes('<img'), html);
    assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.equal(notificationText(broker.pending[0]!), message);
  });

  it('draws the card keyboard-operable: a labelled group, real buttons naming the choice and what it covers', () => {
    const broker = new ApprovalBroker(surface(true));
    void broker.ask(PARAMS);
    const html = renderApprovals(broker.pending);
    const id = broker.pending[0]!.id;
    assert.match(html, new RegExp(`<section class="entry approval" data-key="approval:${id}" role="group" aria-labelledby="approval-${id}-title" tabindex="-1">`));
    assert.match(html, /<code class="approval-what">python3 -c &#39;print\(1\)&#39;<\/code>/);
    for (const decision of ['allow_once', 'allow_session', 'deny']) {
      assert.match(html, new RegExp(`<button type="button" class="approve ${decision}" data-approval="${id}" data-decision="${decision}" aria-describedby="approval-${id}-${decision}"`));
    }
    assert.equal(renderApprovals([]), '');
  });
});
