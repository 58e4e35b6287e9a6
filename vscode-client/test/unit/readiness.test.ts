// A new user's first minutes: no server yet, no model yet. What waits, what is said (once), and
// which settings page opens.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { AgentClient } from '../../src/agentClient.js';
import { AgentCommands, REVEAL_TRANSCRIPT } from '../../src/commands.js';
import { Methods } from '../../src/protocol.js';
import {
  NO_MODEL_MESSAGE,
  Readiness,
  WaitingPrompts,
  isNoModelError,
  isNoModelMessage,
  openSettingCommand,
  setupState,
  waitingReason,
} from '../../src/readiness.js';
import { renderWaiting } from '../../src/transcriptHtml.js';
import { GEN, SESSION, item } from '../helpers/events.js';
import { FakeComposer, FakeHost, FakeRpc, rpcError } from '../helpers/fakes.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The server's sentence (lsp_agent.providers.registry.NO_MODEL), as agent/run refuses with it. */
const SERVER_NO_MODEL =
  'no model is configured: pass --model provider/model (e.g. ollama/qwen2.5-coder, openai/gpt-4.1; --base-url URL for another OpenAI-compatible server), or set model = "provider/model" in .lsp-agent/config.toml';
const noModelRefusal = (): Error => rpcError(-32010, SERVER_NO_MODEL, { kind: 'config', status: 503 });

function setup(server: 'starting' | 'ready' | 'failed' = 'ready'): {
  host: FakeHost;
  rpc: FakeRpc;
  composer: FakeComposer;
  client: AgentClient;
  readiness: Readiness;
  waiting: WaitingPrompts;
  commands: AgentCommands;
} {
  const rpc = new FakeRpc();
  const client = new AgentClient({ newClientID: () => 'client-1' });
  client.attach(rpc);
  const host = new FakeHost();
  const composer = new FakeComposer();
  const readiness = new Readiness(server);
  const waiting = new WaitingPrompts();
  const commands = new AgentCommands(host, client, composer, silent, readiness, waiting);
  // as extension.ts wires it: any change of the server or the model tries the waiting prompts
  readiness.onDidChange(() => void commands.flushWaiting());
  return { host, rpc, composer, client, readiness, waiting, commands };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i += 1) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('readiness', () => {
  it('maps the server and the model to the welcome view to show', () => {
    assert.equal(setupState('failed', 'unknown'), 'noServer');
    assert.equal(setupState('stopped', 'missing'), 'noServer');
    assert.equal(setupState('starting', 'missing'), 'starting');
    assert.equal(setupState('ready', 'missing'), 'noModel');
    assert.equal(setupState('ready', 'unknown'), 'ready');
    assert.equal(waitingReason('ready'), undefined);
    assert.equal(waitingReason('noModel'), 'choose a model to send');
    assert.match(waitingReason('starting')!, /waiting for the server/);
  });

  it('recognises the server\'s no-model sentence, in a message and in a refusal, and nothing else', () => {
    assert.ok(isNoModelMessage(`lsp-agent: ${SERVER_NO_MODEL}`));
    assert.ok(isNoModelMessage(SERVER_NO_MODEL));
    assert.ok(isNoModelError(noModelRefusal()));
    assert.ok(!isNoModelError(rpcError(-32010, 'model "x/y" cannot be used: unknown provider', { kind: 'config' })));
    assert.ok(!isNoModelError(rpcError(-32602, SERVER_NO_MODEL, { kind: 'invalid_params' })));
    assert.ok(!isNoModelMessage('lsp-agent: settings problems (defaults used instead): maxSteps'));
  });

  it('a new server forgets what the old one said about the model', () => {
    const readiness = new Readiness('ready');
    assert.equal(readiness.modelMissing(), true);
    assert.equal(readiness.modelMissing(), false, 'news only once');
    readiness.setServer('starting');
    assert.equal(readiness.model, 'unknown');
  });

  it('the model the server resolved (a config file may name it) decides the welcome, not the VS Code setting', () => {
    const readiness = new Readiness('ready');
    readiness.modelMissing();
    assert.equal(readiness.setup, 'noModel');
    readiness.modelResolved('ollama/qwen2.5-coder'); // set in .lsp-agent/config.toml since
    assert.equal(readiness.setup, 'ready');
    readiness.modelResolved(null);
    assert.equal(readiness.setup, 'noModel');
    readiness.modelResolved(undefined); // an older server without `current`: nothing learned
    assert.equal(readiness.setup, 'noModel');
  });

  it('not started yet is neither a failure nor a missing model', () => {
    assert.equal(setupState('idle', 'unknown'), 'starting');
  });
});

describe('the exact setting, on the tab where it can be edited', () => {
  it('opens lspAgent.python on the Remote tab in a remote window, and in User settings in a local one', () => {
    assert.deepEqual(openSettingCommand('lspAgent.python', 'machine-overridable', 'ssh-remote'), {
      command: 'workbench.action.openRemoteSettings',
      args: [{ query: 'lspAgent.python' }],
    });
    assert.deepEqual(openSettingCommand('lspAgent.python', 'machine-overridable', undefined), {
      command: 'workbench.action.openSettings',
      args: ['lspAgent.python'],
    });
    // a window-scoped setting is on the User tab even in a remote window
    assert.deepEqual(openSettingCommand('lspAgent.model', 'window', 'ssh-remote'), { command: 'workbench.action.openSettings', args: ['lspAgent.model'] });
  });

  it('falls back to the User settings when the Remote settings command is not there', async () => {
    const { host, commands } = setup();
    host.remote = 'wsl';
    host.unknownCommands.add('workbench.action.openRemoteSettings');
    await commands.openPythonSetting();
    assert.deepEqual(host.executed, [
      { command: 'workbench.action.openRemoteSettings', args: [{ query: 'lspAgent.python' }] },
      { command: 'workbench.action.openSettings', args: ['lspAgent.python'] },
    ]);
  });
});

describe('a typed prompt is never dropped', () => {
  it('waits while the server starts, then runs (visibly waiting in between)', async () => {
    const { rpc, waiting, readiness, commands } = setup('starting');
    assert.equal(await commands.submit('fix the test'), true, 'the input may be cleared: the prompt is kept');
    assert.deepEqual(waiting.items.map((p) => p.text), ['fix the test']);
    assert.deepEqual(rpc.methods(), [], 'nothing sent to a server that is not there');
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    readiness.setServer('ready');
    await settle();
    assert.deepEqual(rpc.sent, [{ method: Methods.run, params: { prompt: 'fix the test' } }]);
    assert.deepEqual(waiting.items, []);
  });

  it('a refusal for want of a model keeps the prompt, says so once with a button, and runs it once a model is set', async () => {
    const { host, rpc, client, waiting, readiness, commands } = setup('ready');
    rpc.answer(Methods.run, noModelRefusal());
    assert.equal(await commands.submit('fix the test'), true);
    assert.deepEqual(waiting.items.map((p) => p.text), ['fix the test']);
    assert.equal(readiness.setup, 'noModel');
    // one message, the client's own, with the button; never the CLI's "pass --model"
    assert.deepEqual(host.messages.filter((m) => m.level !== 'flash'), [{ level: 'warning', text: NO_MODEL_MESSAGE }]);
    assert.ok(!host.messages.some((m) => /--model/.test(m.text)));
    // the server's own startup message about it adds nothing
    commands.noModel();
    assert.equal(host.messages.filter((m) => m.level === 'warning').length, 1);
    // typed meanwhile: waits behind the first; the first is tried again (a model may have been set
    // in .lsp-agent/config.toml, which the client does not watch) and refused again, said no twice
    rpc.answer(Methods.run, noModelRefusal());
    assert.equal(await commands.submit('then the docs'), true);
    await settle();
    assert.deepEqual(rpc.methods(), [Methods.run, Methods.run]);
    assert.deepEqual(waiting.items.map((p) => p.text), ['fix the test', 'then the docs']);
    assert.equal(host.messages.filter((m) => m.level === 'warning').length, 1);
    // the user sets a model: both go, in order (the second as a follow-up of the running first)
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    rpc.answer(Methods.queueAdd, { item: item({ text: 'then the docs' }) });
    readiness.modelMaybeSet();
    await settle();
    assert.deepEqual(rpc.methods(), [Methods.run, Methods.run, Methods.run, Methods.queueAdd]);
    assert.deepEqual(rpc.sent[2]!.params, { prompt: 'fix the test' });
    assert.deepEqual(waiting.items, []);
    assert.equal(client.snapshot.running, true);
  });

  it('a model set where the client does not look (config.toml) is found by the next prompt: a stale "missing" holds nothing', async () => {
    const { rpc, waiting, readiness, commands } = setup('ready');
    readiness.modelMissing();
    rpc.answer(Methods.run, { sessionID: SESSION, generation: GEN });
    assert.equal(await commands.submit('fix the test'), true);
    assert.deepEqual(rpc.methods(), [Methods.run]);
    assert.deepEqual(waiting.items, []);
    assert.equal(readiness.setup, 'ready', 'the welcome for a missing model goes');
  });

  it('Choose a Model on the message opens the model setting', async () => {
    const { host, rpc, commands } = setup('ready');
    host.choice = 'Choose a Model';
    rpc.answer(Methods.run, noModelRefusal());
    await commands.submit('fix the test');
    await settle();
    assert.deepEqual(host.executed.at(-1), { command: 'workbench.action.openSettings', args: ['lspAgent.model'] });
  });

  it('Run Task from the palette waits too, and shows the view where it waits', async () => {
    const { host, waiting, commands } = setup('failed');
    host.inputAnswers = ['fix the test'];
    await commands.runTask();
    assert.deepEqual(waiting.items.map((p) => p.text), ['fix the test']);
    assert.deepEqual(host.executed, [{ command: REVEAL_TRANSCRIPT, args: [] }]);
    assert.match(host.last('flash')!, /^LSP Agent: prompt waiting for the server: it is not running/);
  });

  it('another failure keeps the prompt waiting (the error is shown), and Edit puts it back into the input', async () => {
    const { host, rpc, composer, waiting, readiness, commands } = setup('starting');
    await commands.submit('fix the test');
    rpc.answer(Methods.run, rpcError(-32010, 'the store is busy', { kind: 'unavailable' }));
    readiness.setServer('ready');
    await settle();
    assert.match(host.last('error')!, /the store is busy/);
    assert.deepEqual(waiting.items.map((p) => p.text), ['fix the test']);
    await commands.withdrawWaiting(String(waiting.items[0]!.id));
    assert.deepEqual(waiting.items, []);
    assert.equal(composer.text, 'fix the test');
  });

  it('draws each waiting prompt with why it waits and what unblocks it (escaped)', () => {
    const html = renderWaiting([{ id: 3, text: '<b>fix</b> it' }], waitingReason('noModel'));
    assert.match(html, /choose a model to send/);
    assert.match(html, /data-command="lspAgent.chooseModel"/);
    assert.match(html, /data-command="lspAgent.sendWaiting" data-arg="3"/);
    assert.match(html, /data-command="lspAgent.withdrawWaiting" data-arg="3"/);
    assert.match(html, /&lt;b&gt;fix&lt;\/b&gt; it/);
    assert.doesNotMatch(renderWaiting([{ id: 1, text: 'x' }], waitingReason('starting')), /chooseModel/);
    assert.equal(renderWaiting([], undefined), '');
  });
});
