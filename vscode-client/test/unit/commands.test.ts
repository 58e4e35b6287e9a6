import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { AgentClient } from '../../src/agentClient.js';
import { AgentCommands, REVEAL_TRANSCRIPT, itemIdOf, receiptMessage } from '../../src/commands.js';
import { Methods } from '../../src/protocol.js';
import { GEN, SESSION, item, runEvents } from '../helpers/events.js';
import { FakeComposer, FakeHost, FakeRpc, rpcError } from '../helpers/fakes.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

async function setup(draft = '', running = true): Promise<{ host: FakeHost; rpc: FakeRpc; composer: FakeComposer; client: AgentClient; commands: AgentCommands }> {
  const rpc = new FakeRpc();
  const client = new AgentClient({ newClientID: () => 'client-1' });
  client.attach(rpc);
  const host = new FakeHost();
  const composer = new FakeComposer(draft);
  if (running) {
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await client.run('go');
    const [start] = runEvents();
    rpc.notify('agent/event', { sessionID: SESSION, generation: GEN, event: start });
  }
  return { host, rpc, composer, client, commands: new AgentCommands(host, client, composer, silent) };
}

describe('Steer Now (ctrl+s)', () => {
  it('steers the draft and clears the input', async () => {
    const { host, rpc, composer, commands } = await setup('  rename it to total ');
    rpc.answer(Methods.steer, { status: 'accepted', generation: GEN, clientID: 'client-1' });
    await commands.steerNow();
    assert.deepEqual(rpc.sent.at(-1)!.params, { sessionID: SESSION, expectedGeneration: GEN, clientID: 'client-1', text: 'rename it to total' });
    assert.equal(composer.text, '');
    assert.match(host.last('flash')!, /Correction accepted/);
  });

  it('warns with the reason when the correction is rejected and keeps nothing half-done', async () => {
    const { host, rpc, commands } = await setup('late');
    rpc.answer(Methods.steer, { status: 'rejected', generation: GEN, clientID: 'client-1', reason: 'generation_not_active' });
    await commands.steerNow();
    assert.equal(host.last('warning'), 'Correction rejected: generation_not_active.');
  });

  it('tells the user when there is nothing to steer', async () => {
    const { host, rpc, commands } = await setup('');
    await commands.steerNow();
    assert.equal(rpc.methods().filter((m) => m !== Methods.run).length, 0);
    assert.equal(host.last('info'), 'Nothing to steer: type a correction first.');
  });

  it('says when the server has no steering yet (method not found)', async () => {
    const { host, rpc, commands } = await setup('x');
    rpc.answer(Methods.steer, rpcError(-32601, 'Method Not Found: agent/steer'));
    await commands.steerNow();
    assert.equal(host.last('warning'), 'Steer Now: this lsp-agent server does not support it yet (update lsp-agent).');
  });
});

describe('other commands', () => {
  it('Run Task asks for the prompt and runs it', async () => {
    const { host, rpc, commands } = await setup('', false);
    host.inputAnswers = ['fix the test'];
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    await commands.runTask();
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.run, params: { prompt: 'fix the test' } });
    // the transcript opens (or comes forward) where the run streams
    assert.deepEqual(host.executed, [{ command: REVEAL_TRANSCRIPT, args: [] }]);
  });

  it('Run Task that the server refuses does not open the transcript', async () => {
    const { host, rpc, commands } = await setup('', false);
    host.inputAnswers = ['fix the test'];
    rpc.answer(Methods.run, rpcError(-32602, 'prompt too long'));
    await commands.runTask();
    assert.deepEqual(host.executed, []);
    assert.match(host.last('error')!, /prompt too long/);
  });

  it('Open Past Session lists agent/sessions and shows the picked one', async () => {
    const { host, rpc, client, commands } = await setup('', false);
    rpc.answer(Methods.sessions, {
      sessions: [
        { sessionID: 'ses_new', title: 'newest', model: 'scripted/demo', createdAt: 2, updatedAt: 2, state: 'idle' },
        { sessionID: 'ses_old', title: 'fix result.txt', model: 'scripted/demo', createdAt: 1, updatedAt: 1, state: 'idle' },
      ],
    });
    host.pickIndex = 1;
    rpc.answer(Methods.session, {
      sessionID: 'ses_old',
      title: 'fix result.txt',
      messages: [{ id: 'msg_1', role: 'user', generation: 'gen-old', step: 0, parts: [{ id: 'p1', type: 'text', text: 'fix result.txt', synthetic: false }] }],
    });
    rpc.answer(Methods.status, { sessionID: 'ses_old', state: 'idle', step: 0, verification: 'verified' });
    rpc.answer(Methods.queueList, { items: [] });
    await commands.openSession();
    assert.deepEqual(host.picks[0]!.map((p) => p.label), ['newest', 'fix result.txt']);
    assert.equal(client.snapshot.sessionID, 'ses_old');
    assert.deepEqual(client.transcript.lines(), ['-- Session ses_old: fix result.txt', '>> fix result.txt']);
    assert.deepEqual(host.executed.at(-1), { command: REVEAL_TRANSCRIPT, args: [] });
    assert.match(host.last('flash')!, /reopened "fix result.txt" \(1 messages\)/);
  });

  it('reopening the current session replaces what is shown (no duplicates) and follows the pages', async () => {
    const { rpc, client } = await setup('', false);
    rpc.answer(Methods.run, { sessionID: 'ses_cur', generation: 'g1' });
    await client.run('first task');
    rpc.notify('agent/event', { sessionID: 'ses_cur', generation: 'g1', event: { ...runEvents('g1').at(-1)!, sessionID: 'ses_cur' } });
    const page = (id: string, text: string, next?: string) => ({
      sessionID: 'ses_cur',
      title: 't',
      messages: [{ id, role: 'user', generation: 'g1', step: 0, parts: [{ id: `p-${id}`, type: 'text', text, synthetic: false }] }],
      ...(next ? { next } : {}),
    });
    rpc.answer(Methods.session, (params: { after?: string }) => (params.after ? undefined : page('m1', 'first task', 'm1')));
    rpc.answer(Methods.session, (params: { after?: string }) => (params.after === 'm1' ? page('m2', 'second task') : undefined));
    rpc.answer(Methods.status, { sessionID: 'ses_cur', state: 'idle', step: 0, verification: 'not_run' });
    rpc.answer(Methods.queueList, { items: [] });
    const opened = await client.openSession('ses_cur');
    assert.deepEqual(opened, { title: 't', messages: 2, complete: true });
    assert.deepEqual(client.transcript.lines(), ['-- Session ses_cur: t', '>> first task', '>> second task']);
  });

  it('Open Past Session is refused while a task runs, and the transcript stays', async () => {
    const { host, rpc, client, commands } = await setup();
    const before = client.transcript.lines();
    rpc.answer(Methods.sessions, { sessions: [{ sessionID: 'ses_old', title: 'old', model: 'm', createdAt: 1, updatedAt: 1, state: 'idle' }] });
    await commands.openSession();
    assert.match(host.last('warning')!, /A task is running/);
    assert.equal(client.snapshot.sessionID, SESSION);
    assert.deepEqual(client.transcript.lines(), before);
    assert.ok(!rpc.methods().includes(Methods.session));
  });

  it('Run Task while running offers to queue instead', async () => {
    const { host, rpc, commands } = await setup();
    host.choice = 'Queue Follow-up';
    host.inputAnswers = ['next'];
    rpc.answer(Methods.queueAdd, { item: item({ text: 'next' }) });
    await commands.runTask();
    assert.equal(rpc.sent.at(-1)!.method, Methods.queueAdd);
  });

  it('Steer With Selection sends the selection with its file and line range', async () => {
    const { host, rpc, commands } = await setup();
    host.selection = { path: 'src/a.py', startLine: 3, endLine: 4, text: 'x = 1\ny = 2', languageId: 'python' };
    host.inputAnswers = ['keep these'];
    rpc.answer(Methods.steer, { status: 'accepted', generation: GEN, clientID: 'client-1' });
    await commands.steerWithSelection();
    const params = rpc.sent.at(-1)!.params as { text: string };
    assert.equal(params.text, 'keep these\n\nFrom src/a.py, lines 3-4:\n```python\nx = 1\ny = 2\n```');
    assert.match(host.inputs[0]!.title!, /src\/a.py, lines 3-4/);
  });

  it('Steer With Selection without an editor explains what to do', async () => {
    const { host, commands } = await setup();
    await commands.steerWithSelection();
    assert.match(host.last('warning')!, /select the code/);
  });

  it('Enter in the input runs when idle and queues while running', async () => {
    const idle = await setup('', false);
    idle.rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    assert.equal(await idle.commands.submit('do it'), true);
    assert.equal(idle.rpc.sent.at(-1)!.method, Methods.run);
    const busy = await setup();
    busy.rpc.answer(Methods.queueAdd, { item: item() });
    assert.equal(await busy.commands.submit('after that'), true);
    assert.equal(busy.rpc.sent.at(-1)!.method, Methods.queueAdd);
    assert.equal(await busy.commands.submit('   '), false);
  });

  it('the queue view actions pass the row to the server', async () => {
    const { rpc, client, commands } = await setup();
    const row = item();
    rpc.notify('agent/queueChanged', { sessionID: SESSION, items: [row] });
    rpc.answer(Methods.queueSteer, { item: { ...row, status: 'cancelled', steeredInto: GEN }, receipt: { status: 'accepted', generation: GEN, clientID: `queue_${row.id}` } });
    await commands.queueSteerItem({ item: row });
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.queueSteer, params: { taskID: row.id } });
    rpc.answer(Methods.queueCancel, { item: { ...row, status: 'cancelled' } });
    await commands.queueCancelItem(row.id);
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.queueCancel, params: { taskID: row.id } });
    assert.equal(client.snapshot.queue[0]!.status, 'cancelled');
  });

  it('steering a queued row with nothing running offers Send Now', async () => {
    const { host, rpc, commands } = await setup();
    const row = item();
    rpc.notify('agent/queueChanged', { sessionID: SESSION, items: [row] });
    rpc.answer(Methods.queueSteer, { item: row, receipt: null, reason: 'generation_not_active' });
    rpc.answer(Methods.queueSendNow, { item: { ...row, status: 'sent' } });
    host.choice = 'Send Now';
    await commands.queueSteerItem(row.id);
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.queueSendNow, params: { taskID: row.id } });
  });

  it('an edit that lost a race refreshes the queue and says so', async () => {
    const { host, rpc, commands } = await setup();
    const row = item({ text: 'old' });
    rpc.notify('agent/queueChanged', { sessionID: SESSION, items: [row] });
    host.inputAnswers = ['new'];
    rpc.answer(Methods.queueEdit, rpcError(-32009, 'changed', { kind: 'conflict', status: 409 }));
    rpc.answer(Methods.queueList, { items: [{ ...row, status: 'sent' }] });
    await commands.queueEditItem(row.id);
    assert.match(host.last('warning')!, /changed meanwhile/);
    assert.equal(rpc.sent.at(-1)!.method, Methods.queueList);
  });

  it('Send Queued Now picks from the waiting rows', async () => {
    const { host, rpc, commands } = await setup();
    const a = item();
    const b = item();
    rpc.notify('agent/queueChanged', { sessionID: SESSION, items: [a, b] });
    host.pickIndex = 1;
    rpc.answer(Methods.queueSendNow, { item: b });
    await commands.sendQueuedNow();
    assert.deepEqual(rpc.sent.at(-1)!.params, { taskID: b.id });
  });

  it('Compact Context reports what the server said', async () => {
    const { host, rpc, commands } = await setup();
    rpc.answer(Methods.compact, { message: 'saved 12,000 tokens' });
    await commands.compactContext();
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.compact, params: { sessionID: SESSION } });
    assert.equal(host.last('info'), 'Context compacted: saved 12,000 tokens');
  });

  it('Cancel sends agent/cancel for the session', async () => {
    const { host, rpc, commands } = await setup();
    rpc.answer(Methods.cancel, { cancelled: true, generation: GEN });
    await commands.cancel();
    assert.deepEqual(rpc.sent.at(-1), { method: Methods.cancel, params: { sessionID: SESSION } });
    assert.equal(host.last('flash'), 'LSP Agent: cancelling…');
  });

  it('unexpected failures become error messages, never exceptions', async () => {
    const { host, rpc, commands } = await setup();
    rpc.answer(Methods.cancel, rpcError(-32603, 'internal error (boom)', { kind: 'internal', status: 500 }));
    await commands.cancel();
    assert.equal(host.last('error'), 'Cancel failed: internal error (boom)');
  });
});

describe('helpers', () => {
  it('itemIdOf accepts tree nodes, rows and IDs', () => {
    assert.equal(itemIdOf({ item: { id: 'a' } }), 'a');
    assert.equal(itemIdOf({ id: 'b' }), 'b');
    assert.equal(itemIdOf('c'), 'c');
    assert.equal(itemIdOf(undefined), undefined);
  });

  it('receiptMessage explains each status', () => {
    assert.match(receiptMessage({ status: 'applied', generation: GEN, clientID: 'x' }), /applied/);
    assert.equal(receiptMessage({ status: 'rejected', generation: GEN, clientID: 'x', reason: 'too_long', detail: '16001 characters' }), 'Correction rejected: too_long (16001 characters).');
  });
});
