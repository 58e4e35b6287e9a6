import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { AgentClient, UserError, fixPromptLine } from '../../src/agentClient.js';
import { Methods, Notifications } from '../../src/protocol.js';
import { GEN, SESSION, item, runEvents } from '../helpers/events.js';
import { FakeRpc, rpcError } from '../helpers/fakes.js';
import { ProtocolMismatch, itemResult, queueItems, steerPrefixResult, steerResult } from '../../src/wire.js';

function connected(): { client: AgentClient; rpc: FakeRpc } {
  const rpc = new FakeRpc();
  let n = 0;
  const client = new AgentClient({ newClientID: () => `client-${++n}` });
  client.attach(rpc);
  return { client, rpc };
}

function emit(rpc: FakeRpc, events = runEvents()): void {
  for (const event of events) {
    rpc.notify(Notifications.event, { sessionID: event.sessionID, generation: event.generation, event });
  }
}

describe('AgentClient runs', () => {
  it('starts a session with agent/run and continues it on the next run', async () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await client.run('  read a ');
    assert.deepEqual(rpc.sent[0], { method: Methods.run, params: { prompt: 'read a' } });
    assert.equal(client.snapshot.sessionID, SESSION);
    assert.equal(client.snapshot.running, true);
    emit(rpc);
    assert.equal(client.snapshot.running, false);
    assert.equal(client.snapshot.verification, 'not_run');
    rpc.answer(Methods.run, { sessionID: SESSION, generation: 'gen-2' });
    await client.run('again');
    assert.deepEqual(rpc.sent[1]!.params, { prompt: 'again', sessionID: SESSION });
  });

  it('tracks the step from step_start events and resolves waiters on run_finish', async () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await client.run('go');
    const finished = client.waitForFinish(GEN, 1000);
    emit(rpc, runEvents().slice(0, 8));
    assert.equal(client.snapshot.step, 2);
    assert.equal(client.snapshot.maxSteps, 40);
    emit(rpc, runEvents().slice(8));
    assert.equal((await finished).stopReason, 'final');
  });

  it('puts a fix run\'s prompt line before its events, whichever arrives first', () => {
    const line = fixPromptLine({ uri: 'file:///w/a.py', line: 3, message: 'boom', kind: 'test' }, 'a.py');
    assert.equal(line, 'fix: test failure in a.py at line 3: boom');
    for (const eventsFirst of [true, false]) {
      const { client, rpc } = connected();
      rpc.answer(Methods.queueList, { items: [] });
      if (eventsFirst) {
        emit(rpc, runEvents().slice(0, 2));
      }
      client.followStartedRun({ sessionID: SESSION, generation: GEN, messageID: '' }, line);
      if (!eventsFirst) {
        emit(rpc, runEvents().slice(0, 2));
      }
      const kinds = client.transcript.entries.map((e) => e.kind);
      assert.equal(client.snapshot.sessionID, SESSION);
      assert.equal(kinds[0], 'prompt', `events first: ${eventsFirst}: ${kinds.join(',')}`);
      assert.equal(kinds.filter((k) => k === 'prompt').length, 1);
    }
  });

  it('does not switch away from a run it shows for a fix run in another session', async () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await client.run('mine');
    emit(rpc, runEvents().slice(0, 1));
    client.followStartedRun({ sessionID: 'ses_other', generation: 'gen-x', messageID: '' }, 'fix: …');
    assert.equal(client.snapshot.sessionID, SESSION);
    assert.ok(!client.transcript.entries.some((e) => e.kind === 'prompt' && e.text === 'fix: …'));
  });

  it('follows a run it did not start when idle (e.g. the fix-this code action)', () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.queueList, { items: [] });
    emit(rpc, runEvents().slice(0, 1));
    assert.equal(client.snapshot.sessionID, SESSION);
    assert.equal(client.snapshot.running, true);
    assert.ok(rpc.methods().includes(Methods.queueList));
  });

  it('ignores another session while its own runs', async () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await client.run('mine');
    const before = client.transcript.entries.length;
    rpc.notify(Notifications.event, { sessionID: 'ses_other', generation: 'g', event: { sessionID: 'ses_other', generation: 'g', type: 'step_start', step: 1, maxSteps: 5 } });
    assert.equal(client.transcript.entries.length, before);
    assert.equal(client.snapshot.sessionID, SESSION);
  });

  it('shows the prompt of a generation the server started from the queue', async () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await client.run('first');
    const waiting = item({ text: 'queued next' });
    rpc.notify(Notifications.queueChanged, { sessionID: SESSION, items: [waiting] });
    emit(rpc);
    rpc.notify(Notifications.queueChanged, { sessionID: SESSION, items: [{ ...waiting, status: 'sent', updatedAt: waiting.updatedAt + 1 }] });
    emit(rpc, runEvents('gen-2').slice(0, 1));
    assert.equal(client.transcript.lines().at(-2), '>> (queued) queued next');
    assert.equal(client.snapshot.generation, 'gen-2');
  });

  it('copes with events that overtake the agent/run answer (the run even finished)', async () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.run, () => {
      emit(rpc);
      return { sessionID: SESSION, generation: GEN };
    });
    await client.run('fast');
    assert.equal(client.snapshot.running, false, 'not marked running after its run_finish');
    assert.equal(client.transcript.lines()[0], '>> fast', 'the prompt goes before the events');
    assert.equal(client.snapshot.verification, 'not_run');
  });

  it('refuses to steer when nothing runs, without asking the server', async () => {
    const { client, rpc } = connected();
    await assert.rejects(client.steer('x'), UserError);
    assert.equal(rpc.sent.length, 0);
  });

  it('says the server is not running when detached', async () => {
    const client = new AgentClient();
    await assert.rejects(client.run('x'), /server is not running/);
  });

  it('forgets a stored session the server does not know', async () => {
    const { client, rpc } = connected();
    client.useSession('ses_gone');
    rpc.answer(Methods.status, rpcError(-32004, 'no session', { kind: 'unknown_session', status: 404 }));
    assert.equal(await client.refreshStatus(), undefined);
    assert.equal(client.snapshot.sessionID, undefined);
  });
});

describe('AgentClient steering', () => {
  async function running(): Promise<{ client: AgentClient; rpc: FakeRpc }> {
    const pair = connected();
    pair.rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await pair.client.run('go');
    emit(pair.rpc, runEvents().slice(0, 1));
    return pair;
  }

  it('sends the correction bound to the running generation with a fresh clientID', async () => {
    const { client, rpc } = await running();
    rpc.answer(Methods.steer, (p: unknown) => ({ status: 'accepted', generation: GEN, clientID: (p as { clientID: string }).clientID }));
    const receipt = await client.steer(' use tabs ');
    assert.deepEqual(rpc.sent.at(-1), {
      method: Methods.steer,
      params: { sessionID: SESSION, expectedGeneration: GEN, clientID: 'client-1', text: 'use tabs' },
    });
    assert.equal(receipt.status, 'accepted');
    rpc.notify(Notifications.receipt, { sessionID: SESSION, receipt: { status: 'applied', generation: GEN, clientID: 'client-1', messageID: 'm' } });
    assert.equal(client.transcript.lines().at(-1), '~> steer [applied] use tabs');
  });

  it('marks the correction rejected when the server answers with an error (409 conflict)', async () => {
    const { client, rpc } = await running();
    rpc.answer(Methods.steer, rpcError(-32009, 'clientID reused', { kind: 'steer_conflict', status: 409 }));
    await assert.rejects(client.steer('x'), /clientID reused/);
    assert.match(client.transcript.lines().at(-1)!, /steer \[rejected \(error: clientID reused\)\] x/);
  });

  it('Steer Now with an empty input promotes the queue prefix with agent/steerPrefix', async () => {
    const { client, rpc } = await running();
    const a = item();
    rpc.notify(Notifications.queueChanged, { sessionID: SESSION, items: [a] });
    rpc.answer(Methods.steerPrefix, {
      results: [{ item: { ...a, status: 'cancelled', steeredInto: GEN }, receipt: { status: 'accepted', generation: GEN, clientID: `queue_${a.id}` } }],
    });
    const outcome = await client.steerNow('');
    assert.equal(outcome.kind, 'promoted');
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.steerPrefix, params: { sessionID: SESSION } });
    assert.equal(client.snapshot.queue[0]!.status, 'cancelled');
    assert.match(client.transcript.lines().at(-1)!, new RegExp(`steer \\[accepted\\] ${a.text}`));
  });

  it('queues with agent/queue/add while a task runs, and edits with the row version', async () => {
    const { client, rpc } = await running();
    const added = item({ text: 'later' });
    rpc.answer(Methods.queueAdd, { item: added });
    await client.queueAdd('later');
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.queueAdd, params: { sessionID: SESSION, text: 'later' } });
    rpc.answer(Methods.queueEdit, { item: { ...added, text: 'sooner', updatedAt: added.updatedAt + 1 } });
    await client.queueEdit(added.id, 'sooner');
    assert.deepEqual(rpc.sent.at(-1)!.params, { taskID: added.id, text: 'sooner', expectedUpdatedAt: added.updatedAt });
    assert.equal(client.snapshot.queue[0]!.text, 'sooner');
  });

  it('runs instead of queueing when there is no session yet', async () => {
    const { client, rpc } = connected();
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    const result = await client.queueAdd('first thing');
    assert.ok(result.run);
    assert.deepEqual(rpc.methods(), [Methods.run]);
  });
});

describe('answer shapes: exactly the generated one', () => {
  it('reads the declared shapes', () => {
    const a = item();
    assert.deepEqual(itemResult({ item: a }, Methods.queueCancel), { item: a });
    assert.deepEqual(itemResult({ item: a, started: { sessionID: SESSION, generation: GEN } }, Methods.queueAdd),
      { item: a, started: { sessionID: SESSION, generation: GEN } });
    assert.deepEqual(queueItems({ items: [a] }), [a]);
    assert.deepEqual(steerResult({ item: a, receipt: null, reason: 'generation_not_active' }),
      { item: a, receipt: null, reason: 'generation_not_active' });
    assert.equal(steerPrefixResult({ results: [] }).length, 0);
  });

  it('refuses every other shape with a ProtocolMismatch naming what is wrong', () => {
    const a = item();
    const unjudged: Record<string, unknown> = { ...a };
    delete unjudged.steerable;
    const cases: [() => unknown, RegExp][] = [
      [() => itemResult(a, Methods.queueCancel), /item: expected an object/],
      [() => queueItems([a]), /expected an object/],
      [() => queueItems({ items: [a, { bad: true }] }), /`id` must be a string/],
      [() => queueItems({ items: [unjudged] }), /`steerable` must be a boolean/],
      [() => steerResult({ item: a }), /`receipt` is missing/],
      [() => steerPrefixResult([{ item: a, receipt: null }]), /expected an object/],
    ];
    for (const [read, message] of cases) {
      assert.throws(read, (error: unknown) => error instanceof ProtocolMismatch && message.test(error.message));
    }
  });
});
