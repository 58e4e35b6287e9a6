import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { AgentClient } from '../../src/agentClient.js';
import type { PickItem } from '../../src/host.js';
import { Methods } from '../../src/protocol.js';
import type { CheckpointOut, MessageOut, RewindResult } from '../../src/protocol.js';
import { RESTORE_CHOICES, RewindFlow, diffFileCount, relativeTime, restoredMessage, rewindErrorText, rewindPoints } from '../../src/rewind.js';
import type { RestoreWhat, RewindClient, RewindUi } from '../../src/rewind.js';
import { Transcript } from '../../src/transcript.js';
import { renderEntry } from '../../src/transcriptHtml.js';
import { GEN, SESSION, runEvents } from '../helpers/events.js';
import { FakeRpc, rpcError } from '../helpers/fakes.js';

const NOW = 1_700_000_000_000;

const MESSAGES: MessageOut[] = [
  { id: 'msg_u1', role: 'user', generation: 'gen_1', parts: [{ id: 'p1', type: 'text', text: 'add a helper\nand test it', synthetic: false }] },
  { id: 'msg_a1', role: 'assistant', generation: 'gen_1', step: 1, parts: [{ id: 'p2', type: 'tool_call', callID: 'c1', name: 'apply_patch', arguments: '{"path":"calc.py"}' }] },
  { id: 'msg_t1', role: 'tool', generation: 'gen_1', parts: [{ id: 'p3', type: 'tool_result', callID: 'c1', name: 'apply_patch', ok: true, output: 'OK', elapsedMs: 1 }] },
  { id: 'msg_a2', role: 'assistant', generation: 'gen_1', step: 2, parts: [{ id: 'p4', type: 'text', text: 'done', synthetic: false }] },
  { id: 'msg_n', role: 'user', generation: 'gen_2', parts: [{ id: 'p5', type: 'text', text: 'a note from the harness', synthetic: true }] },
] as MessageOut[];

const CHECKPOINTS: CheckpointOut[] = [
  { id: 'ckpt-1', messageID: 'msg_a1', step: 1, tool: 'apply_patch', phase: 'before', files: [], outside: [], when: NOW / 1000 - 300 },
  { id: 'ckpt-2', messageID: 'msg_a1', step: 1, tool: 'apply_patch', phase: 'after', files: ['calc.py', 'b.py'], outside: [], when: NOW / 1000 - 299 },
];

describe('the /rewind picker', () => {
  it("lists the user's messages and the steps that made calls, newest first, with files and when", () => {
    const points = rewindPoints(MESSAGES, CHECKPOINTS, NOW);
    assert.deepEqual(points.map((p) => p.messageID), ['msg_a1', 'msg_u1']);
    assert.equal(points[0]!.label, '$(tools) Step 1: apply_patch');
    assert.equal(points[0]!.description, 'b.py, calc.py');
    assert.match(points[0]!.detail!, /Before this step's effects · 5 min ago/);
    assert.equal(points[1]!.label, '$(comment) add a helper');
    assert.match(points[1]!.detail!, /Before this message's run · 5 min ago/);
  });

  it('counts the files a preview changes', () => {
    assert.equal(diffFileCount('--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/made.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-m\n'), 2);
    assert.equal(diffFileCount(''), 0);
  });

  it('says when in words', () => {
    assert.equal(relativeTime(NOW / 1000 - 10, NOW), 'just now');
    assert.equal(relativeTime(NOW / 1000 - 7200, NOW), '2 h ago');
    assert.equal(relativeTime(NOW / 1000 - 86_400, NOW), '1 day ago');
  });
});

describe('results and refusals in words', () => {
  it('counts files restored on disk and in editors once, names kept conflicts and problems', () => {
    const result: RewindResult = {
      status: 'conflicts', target: 'ckpt-1', undo: 'ckpt-9', diff: '', restored: ['a.py', 'b.py'], inEditor: ['b.py'],
      kept: ['mine.py'], failed: { 'c.py': 'permission denied' },
    };
    const { text, problems } = restoredMessage(result);
    assert.match(text, /^Restored 2 files\. Kept your changes to mine\.py\./);
    assert.deepEqual(problems, ['c.py: restoring failed (permission denied)']);
  });

  it('gives each classified refusal its fix', () => {
    assert.match(rewindErrorText(rpcError(-32010, 'x', { kind: 'busy' })), /running\. Stop it/);
    assert.match(rewindErrorText(rpcError(-32004, 'x', { kind: 'checkpoint_folded' })), /older than the checkpoints kept.*later message/);
    assert.match(rewindErrorText(rpcError(-32004, 'x', { kind: 'unknown_message' })), /not in this session.*Reopen/);
    assert.match(rewindErrorText(rpcError(-32011, 'too big', { kind: 'checkpoint_unavailable' })), /no usable checkpoint there \(too big\)/);
  });
});

class FakeUi implements RewindUi {
  readonly said: { level: string; text: string }[] = [];
  readonly diffs: string[] = [];
  picks: (string | undefined)[] = [];
  afterPreview: RestoreWhat | undefined;
  conflictAnswer: boolean | undefined;
  asked: string[][] = [];
  infoAnswer: string | undefined;

  pick<T extends PickItem>(items: T[]): Promise<T | undefined> {
    const label = this.picks.shift();
    return Promise.resolve(label === undefined ? undefined : items.find((i) => i.label === label || ('messageID' in i && i.messageID === label)));
  }
  showDiff(diff: string): Promise<void> {
    this.diffs.push(diff);
    return Promise.resolve();
  }
  confirmAfterPreview(): Promise<RestoreWhat | undefined> {
    return Promise.resolve(this.afterPreview);
  }
  askConflicts(files: readonly string[]): Promise<boolean | undefined> {
    this.asked.push([...files]);
    return Promise.resolve(this.conflictAnswer);
  }
  info(text: string, ...actions: string[]): Promise<string | undefined> {
    this.said.push({ level: 'info', text });
    const answer = actions.includes(this.infoAnswer ?? '') ? this.infoAnswer : undefined;
    this.infoAnswer = undefined; // answered once
    return Promise.resolve(answer);
  }
  warn(text: string): Promise<void> {
    this.said.push({ level: 'warn', text });
    return Promise.resolve();
  }
  error(text: string): Promise<void> {
    this.said.push({ level: 'error', text });
    return Promise.resolve();
  }
  readonly saved: string[][] = [];
  saveEditors(paths: readonly string[]): Promise<string[]> {
    this.saved.push([...paths]);
    return Promise.resolve([]);
  }
}

class FakeClient implements RewindClient {
  snapshot: { sessionID?: string; running: boolean } = { sessionID: SESSION, running: false };
  readonly sent: { method: string; params: Record<string, unknown> }[] = [];
  readonly opened: string[] = [];
  answers: ((params: Record<string, unknown>) => unknown)[] = [];

  send<T>(method: string, params?: unknown): Promise<T> {
    this.sent.push({ method, params: params as Record<string, unknown> });
    const answer = this.answers.shift();
    if (!answer) {
      return Promise.reject(new Error(`unexpected ${method}`));
    }
    try {
      return Promise.resolve(answer(params as Record<string, unknown>) as T);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
  openSession(sessionID: string): Promise<unknown> {
    this.opened.push(sessionID);
    return Promise.resolve({});
  }
}

function result(over: Partial<RewindResult>): RewindResult {
  return { status: 'done', target: 'ckpt-1', undo: 'ckpt-7', diff: '', restored: [], inEditor: [], conflicts: [], kept: [], ...over };
}

const DRY = result({ status: 'dry_run', diff: '--- a/calc.py\n+++ b/calc.py\n', restored: ['made.txt'], inEditor: ['calc.py'] });

describe('Restore to here', () => {
  it('"Restore code" plans with a dry run, restores the code, and Undo rewinds to the checkpoint it returned', async () => {
    const client = new FakeClient();
    const ui = new FakeUi();
    ui.picks = ['Restore code'];
    ui.infoAnswer = 'Undo';
    client.answers = [() => DRY, () => result({ restored: ['made.txt'], inEditor: ['calc.py'] }), () => result({ restored: ['made.txt', 'calc.py'] })];
    await new RewindFlow(client, ui).restoreTo('msg_u1');
    assert.deepEqual(client.sent.map((s) => s.params), [
      { sessionID: SESSION, toMessageID: 'msg_u1', restore: 'code', dryRun: true },
      { sessionID: SESSION, toMessageID: 'msg_u1', restore: 'code', confirm: false },
      { sessionID: SESSION, toMessageID: 'ckpt-7', restore: 'code', confirm: true },
    ]);
    assert.match(ui.said[0]!.text, /^Restored 2 files\./);
    assert.match(ui.said[1]!.text, /^Undone: put back 2 files/);
    // the restored editor is saved (the disk matches what the user sees); the undo's editors too (none here)
    assert.deepEqual(ui.saved, [['calc.py']]);
    assert.deepEqual(client.opened, []);
  });

  it('asks about files changed outside the agent: keeping them sends no confirm, restoring them does', async () => {
    for (const [answer, confirm] of [[false, false], [true, true]] as const) {
      const client = new FakeClient();
      const ui = new FakeUi();
      ui.picks = ['Restore code'];
      ui.conflictAnswer = answer;
      client.answers = [() => ({ ...DRY, conflicts: ['notes.txt'] }), () => result({})];
      await new RewindFlow(client, ui).restoreTo('msg_a1');
      assert.deepEqual(ui.asked, [['notes.txt']]);
      assert.equal(client.sent[1]!.params.confirm, confirm);
    }
  });

  it('"Restore conversation" forks without touching files and follows the fork', async () => {
    const client = new FakeClient();
    const ui = new FakeUi();
    ui.picks = ['Restore conversation'];
    client.answers = [() => result({ sessionID: 'ses_fork' })];
    await new RewindFlow(client, ui).restoreTo('msg_u1');
    assert.deepEqual(client.sent.map((s) => s.params.restore), ['conversation']);
    assert.deepEqual(client.opened, ['ses_fork']);
    assert.match(ui.said.at(-1)!.text, /Conversation restored/);
  });

  it('the preview shows the dry run diff, then goes on with what the user picks', async () => {
    const client = new FakeClient();
    const ui = new FakeUi();
    ui.picks = ['Preview code changes first…'];
    ui.afterPreview = 'both';
    client.answers = [() => DRY, () => result({ sessionID: 'ses_fork', restored: ['made.txt'] })];
    await new RewindFlow(client, ui).restoreTo('msg_u1');
    assert.deepEqual(ui.diffs, [DRY.diff]);
    assert.deepEqual(client.sent.map((s) => [s.params.restore, s.params.dryRun ?? false]), [['code', true], ['both', false]]);
    assert.deepEqual(client.opened, ['ses_fork']);
  });

  it('cancelling the preview restores nothing', async () => {
    const client = new FakeClient();
    const ui = new FakeUi();
    ui.picks = ['Preview code changes first…'];
    client.answers = [() => DRY];
    await new RewindFlow(client, ui).restoreTo('msg_u1');
    assert.equal(client.sent.length, 1);
  });

  it('refuses while a task runs, and says a server refusal with its fix', async () => {
    const client = new FakeClient();
    client.snapshot.running = true;
    const ui = new FakeUi();
    await new RewindFlow(client, ui).restoreTo('msg_u1');
    assert.equal(client.sent.length, 0);
    assert.match(ui.said[0]!.text, /A task is running: stop it/);

    client.snapshot.running = false;
    ui.picks = ['Restore code'];
    client.answers = [() => {
      throw rpcError(-32004, 'folded', { kind: 'checkpoint_folded' });
    }];
    await new RewindFlow(client, ui).restoreTo('msg_u1');
    assert.match(ui.said.at(-1)!.text, /older than the checkpoints kept/);
  });

  it('/rewind lists the session (newest first) and restores to the picked point', async () => {
    const client = new FakeClient();
    const ui = new FakeUi();
    ui.picks = ['msg_u1', 'Restore conversation'];
    client.answers = [() => ({ sessionID: SESSION, title: 't', messages: MESSAGES }), () => ({ checkpoints: CHECKPOINTS }), () => result({ sessionID: 'ses_fork' })];
    await new RewindFlow(client, ui, () => NOW).pickAndRestore();
    assert.deepEqual(client.sent.map((s) => s.method), [Methods.session, Methods.checkpoints, Methods.rewind]);
    assert.equal(client.sent[2]!.params.toMessageID, 'msg_u1');
  });

  it('offers the three restores and a preview', () => {
    assert.deepEqual(RESTORE_CHOICES.map((c) => [c.restore, c.preview]), [['code', false], ['conversation', false], ['both', false], ['code', true]]);
    assert.ok(RESTORE_CHOICES.every((c) => c.detail));
  });
});

describe('the transcript knows what to restore to', () => {
  it('a live run: the prompt gets the ID agent/run answered, the step header and tool row the call\'s message', async () => {
    const rpc = new FakeRpc();
    const client = new AgentClient({ newClientID: () => 'client-1' });
    client.attach(rpc);
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN, messageID: 'msg_prompt' });
    await client.run('go');
    for (const event of runEvents()) {
      rpc.notify('agent/event', { sessionID: SESSION, generation: GEN, event });
    }
    const entries = client.transcript.entries;
    const prompt = entries.find((e) => e.kind === 'prompt');
    const step1 = entries.find((e) => e.kind === 'step' && e.step === 1);
    const step2 = entries.find((e) => e.kind === 'step' && e.step === 2);
    const tool = entries.find((e) => e.kind === 'tool');
    assert.equal(prompt?.kind === 'prompt' && prompt.messageID, 'msg_prompt');
    assert.equal(step1?.kind === 'step' && step1.messageID, 'msg_1');
    assert.equal(tool?.kind === 'tool' && tool.messageID, 'msg_1');
    assert.equal(step2?.kind === 'step' && step2.messageID, undefined); // a reply without calls changed nothing
    assert.match(renderEntry(prompt!), /data-command="lspAgent\.restoreToHere" data-arg="msg_prompt"/);
    assert.match(renderEntry(tool!), /<summary[^>]*>.*data-arg="msg_1".*<\/summary>/s);
    assert.doesNotMatch(renderEntry(step2!), /restore/);
  });

  it('a replayed session: prompts, steps with calls and tool rows carry their stored message IDs', () => {
    const transcript = new Transcript();
    transcript.history(MESSAGES);
    const ids = transcript.entries.map((e) => [e.kind, 'messageID' in e ? e.messageID : undefined]);
    assert.deepEqual(ids.filter(([kind]) => kind === 'prompt' || kind === 'step' || kind === 'tool'), [
      ['prompt', 'msg_u1'], ['step', 'msg_a1'], ['tool', 'msg_a1'], ['step', undefined],
    ]);
  });
});
