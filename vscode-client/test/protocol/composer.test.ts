// Against the real server: what the composer attaches goes with the prompt through the very
// AgentCommands the extension uses, and the stored prompt (what a reopened session shows, what the
// model read) has it; an attachment the server cannot send is refused, said, and starts nothing.

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';

import { AgentCommands } from '../../src/commands.js';
import { attachmentsOf } from '../../src/composerModel.js';
import { Methods } from '../../src/protocol.js';
import { Readiness, WaitingPrompts } from '../../src/readiness.js';
import { FakeComposer, FakeHost } from '../helpers/fakes.js';
import { Editor, fixture, workspace } from './harness.js';

const TEST = { timeout: 90_000 };
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('protocol: a prompt with attachments (real server)', () => {
  it('agent/run carries the chips; the stored prompt has them; a refused one starts nothing', TEST, async () => {
    const root = workspace({ 'a.txt': 'hello\n' });
    const editor = await Editor.start(root, { model: 'scripted/demo', script: fixture('run.json') });
    try {
      const host = new FakeHost();
      const commands = new AgentCommands(host, editor.client, new FakeComposer(), silent, new Readiness('ready'), new WaitingPrompts());

      // refused: an image cannot be sent; said to the user, nothing started
      assert.equal(await commands.submit('look at this', [{ type: 'image', path: 'shot.png' }]), false);
      assert.match(JSON.stringify(host.messages), /only `text` and `file` attachments/);
      assert.equal(editor.events.length, 0);
      assert.equal(editor.client.snapshot.sessionID, undefined);

      const attachments = attachmentsOf([
        { key: 'file:a.txt', kind: 'file', label: 'a.txt', attachment: { type: 'file', path: 'a.txt' } },
        { key: 'selection', kind: 'selection', label: 'selection a.txt:1-1', attachment: { type: 'text', name: 'selection a.txt:1-1', text: 'hello' } },
      ]);
      assert.equal(await commands.submit('what does a.txt say?', attachments), true);
      const finish = await editor.waitForEvent((e) => e.event.type === 'run_finish', 'the run to end');
      assert.equal((finish.event as { stopReason?: string }).stopReason, 'final');

      const sessionID = editor.client.snapshot.sessionID;
      assert.ok(sessionID);
      const stored = (await editor.client.send<{ messages: { role: string; parts: { type: string; text?: string }[] }[] }>(Methods.session, { sessionID }))
        .messages.filter((m) => m.role === 'user')
        .map((m) => m.parts.map((p) => p.text ?? '').join(''));
      assert.equal(stored.length, 1);
      assert.equal(
        stored[0],
        'what does a.txt say?\n\n[attachment 1: the file a.txt — read it with read_file]\n\n[attachment 2: selection a.txt:1-1]\nhello',
      );
    } finally {
      await editor.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
