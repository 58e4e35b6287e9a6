import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { decideSteerNow, queueRows, steerBlocker, steerablePrefix, waitingItems } from '../../src/queueState.js';
import { item } from '../helpers/events.js';

const ids = (items: { id: string }[]): string[] => items.map((i) => i.id);

const ATTACHMENTS = 'a follow-up with attachments cannot be steered; send it as a new message';
const COMMAND = "only text follow-ups can be steered, not 'command'";

describe('steerBlocker', () => {
  it("reports the server's verdict on the row, not a rule of its own", () => {
    assert.equal(steerBlocker(item()), undefined);
    assert.equal(steerBlocker(item({ steerable: false, steerBlocker: ATTACHMENTS })), ATTACHMENTS);
    // The client does not re-derive the rule: a row the server calls steerable is steerable.
    assert.equal(steerBlocker(item({ kind: 'command', attachments: ['x'] })), undefined);
    assert.match(steerBlocker(item({ steerable: false }))!, /cannot be steered/);
  });
});

describe('steerablePrefix', () => {
  it('follows FIFO order by position, not by list order', () => {
    const a = item({ position: 2 });
    const b = item({ position: 1 });
    assert.deepEqual(ids(waitingItems([a, b])), [b.id, a.id]);
    assert.deepEqual(ids(steerablePrefix([a, b])), [b.id, a.id]);
  });

  it('stops at the first row that cannot be steered, so later rows never jump ahead', () => {
    const first = item();
    const blocked = item({ attachments: ['x'], steerable: false, steerBlocker: ATTACHMENTS });
    const later = item();
    assert.deepEqual(ids(steerablePrefix([first, blocked, later])), [first.id]);
    assert.deepEqual(steerablePrefix([blocked, later]), []);
  });

  it('ignores settled rows', () => {
    const sent = item({ status: 'sent' });
    const waiting = item();
    assert.deepEqual(ids(steerablePrefix([sent, waiting])), [waiting.id]);
  });
});

describe('decideSteerNow', () => {
  it('steers a typed draft while a task runs', () => {
    assert.deepEqual(decideSteerNow('  use tabs ', true, [item()]), { kind: 'steerDraft', text: 'use tabs' });
  });

  it('starts a typed draft when nothing runs', () => {
    assert.deepEqual(decideSteerNow('do it', false, []), { kind: 'runDraft', text: 'do it' });
  });

  it('promotes the steerable prefix with an empty input', () => {
    const a = item();
    const b = item();
    const action = decideSteerNow('   ', true, [a, b, item({ kind: 'command', steerable: false, steerBlocker: COMMAND })]);
    assert.ok(action.kind === 'promotePrefix');
    assert.deepEqual(ids(action.items), [a.id, b.id]);
  });

  it('lets the server send the first row when the task is gone (idle, empty input)', () => {
    assert.equal(decideSteerNow('', false, [item()]).kind, 'promotePrefix');
  });

  it('says why nothing happens', () => {
    assert.deepEqual(decideSteerNow('', true, []), { kind: 'none', reason: 'Nothing to steer: type a correction first.' });
    const blocked = decideSteerNow('', true, [item({ attachments: ['x'], steerable: false, steerBlocker: ATTACHMENTS }), item()]);
    assert.ok(blocked.kind === 'none');
    assert.match(blocked.reason, /cannot be steered \(a follow-up with attachments/);
  });
});

describe('queueRows', () => {
  it('lists waiting rows in order with their place, prefix marks and actions', () => {
    const a = item({ text: 'first\nsecond line' });
    const paused = item({ status: 'paused' });
    const blocked = item({ kind: 'command', text: '/compact', steerable: false, steerBlocker: COMMAND });
    const rows = queueRows([blocked, paused, a], true);
    assert.deepEqual(
      rows.map((r) => [r.label, r.description, r.contextValue, r.icon, r.prefixIndex]),
      [
        ['first second line', '#1 · steers with Ctrl+S', 'lspAgent.queueItem.waiting.steerable', 'zap', 1],
        [paused.text, '#2 · paused · steers with Ctrl+S', 'lspAgent.queueItem.waiting.steerable', 'debug-pause', 2],
        ['/compact', '#3 · command', 'lspAgent.queueItem.waiting', 'clock', 0],
      ],
    );
    assert.match(rows[2]!.tooltip, /Cannot be steered: only text follow-ups/);
    assert.match(rows[1]!.tooltip, /Paused after an interrupt/);
  });

  it('when nothing runs, marks only the first row: Ctrl+S sends one row, keeping the order', () => {
    const rows = queueRows([item(), item()], false);
    assert.deepEqual(rows.map((r) => [r.description, r.icon]), [['#1 · sends with Ctrl+S', 'zap'], ['#2', 'clock']]);
  });

  it('puts settled rows in the history, newest first, with how they ended', () => {
    const sent = item({ status: 'sent', updatedAt: 5000 });
    const steered = item({ status: 'cancelled', steeredInto: 'gen-1', steeredAppliedAt: 6000, updatedAt: 6000 });
    const pending = item({ status: 'cancelled', steeredInto: 'gen-1', updatedAt: 5500 });
    const failed = item({ status: 'failed', error: 'boom', updatedAt: 4000 });
    const rows = queueRows([sent, failed, steered, pending], true);
    assert.deepEqual(
      rows.map((r) => [r.id, r.group, r.description, r.contextValue]),
      [
        [steered.id, 'history', 'steered · applied', 'lspAgent.queueItem.settled'],
        [pending.id, 'history', 'steered · pending', 'lspAgent.queueItem.settled'],
        [sent.id, 'history', 'sent', 'lspAgent.queueItem.settled'],
        [failed.id, 'history', 'failed · boom', 'lspAgent.queueItem.settled'],
      ],
    );
  });
});
