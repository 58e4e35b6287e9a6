// Against the real server with no model configured: the client recognises the server's own words
// (the message after start, agent/run's refusal) — if the server rewords them, this goes red —
// and a prompt typed then waits and runs once a model setting is pushed, through the very
// AgentCommands the extension uses.

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';

import { AgentCommands } from '../../src/commands.js';
import { NO_MODEL_MESSAGE, Readiness, WaitingPrompts, isNoModelError, isNoModelMessage } from '../../src/readiness.js';
import { FakeComposer, FakeHost } from '../helpers/fakes.js';
import { Editor, fixture, workspace } from './harness.js';

const TEST = { timeout: 90_000 };
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('protocol: no model yet (real server)', () => {
  it('the server\'s no-model message and refusal are recognised; a prompt typed then runs once a model is set', TEST, async () => {
    const root = workspace({ 'a.txt': 'hello\n' });
    const editor = await Editor.start(root, {});
    try {
      // after start, unasked: the server's message, in the words the client replaces
      const said = await editor.waitFor(() => editor.messages.find((m) => isNoModelMessage(m.message)), 'the no-model message');
      assert.match(said.message, /pass --model/, 'the CLI-shaped text the client hides');

      const host = new FakeHost();
      const readiness = new Readiness('ready');
      const waiting = new WaitingPrompts();
      const commands = new AgentCommands(host, editor.client, new FakeComposer(), silent, readiness, waiting);
      readiness.onDidChange(() => void commands.flushWaiting());

      // agent/run is refused for want of a model: kept, one message of the client's own
      const refusal = await editor.client.run('probe').then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(isNoModelError(refusal), String(refusal));
      assert.equal(await commands.submit('what does a.txt say?'), true);
      assert.deepEqual(waiting.items.map((p) => p.text), ['what does a.txt say?']);
      assert.deepEqual(host.messages.filter((m) => m.level !== 'flash'), [{ level: 'warning', text: NO_MODEL_MESSAGE }]);

      // the user sets a model: pushed as the extension does, then the waiting prompt goes by itself
      await editor.changeSettings({ model: 'scripted/demo', script: fixture('run.json') });
      readiness.modelMaybeSet();
      // (a scripted run may end before a poll sees it running: wait for its end)
      const finish = await editor.waitForEvent((e) => e.event.type === 'run_finish', 'the waiting prompt\'s run to end');
      assert.equal((finish.event as { stopReason?: string }).stopReason, 'final');
      assert.deepEqual(waiting.items, []);
      const prompts = editor.client.transcript.entries.filter((e) => e.kind === 'prompt');
      assert.deepEqual(prompts.map((p) => (p as { text: string }).text), ['what does a.txt say?']);
    } finally {
      await editor.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
