// The protocol test: the real Python server, driven over vscode-jsonrpc by the client's own
// modules (AgentClient, settings mapping, saveDocuments): run → events → steer → queue → cancel.
// Methods the server does not offer yet are skipped, with the reason printed.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';

import { MCP_LIST, McpCommands } from '../../src/mcp.js';
import { Methods, SkillMethods } from '../../src/protocol.js';
import type { QueueItem } from '../../src/protocol.js';
import { errorFacts, isConflict } from '../../src/rpc.js';
import { SkillCommands } from '../../src/skills.js';
import { WORKSPACE_TRUST } from '../../src/trust.js';
import type { SteerEntry } from '../../src/transcript.js';
import { FakeHost } from '../helpers/fakes.js';
import { Editor, PYTHON, fixture, serverMethods, workspace } from './harness.js';

const methods = serverMethods();
const STEERING = [Methods.steer, Methods.steering];
const QUEUE = [Methods.queueList, Methods.queueAdd, Methods.queueSteer, Methods.queueSendNow, Methods.queueCancel, Methods.queueEdit, Methods.steerPrefix];

/** false when the server offers every method, else why the test is skipped. */
function needs(...names: string[]): string | false {
  const missing = names.filter((name) => !methods.has(name));
  return missing.length ? `this lsp-agent server does not offer ${missing.join(', ')} yet` : false;
}

const TEST = { timeout: 90_000 };

async function withEditor(root: string, settings: Record<string, unknown>, body: (editor: Editor) => Promise<void>): Promise<void> {
  const editor = await Editor.start(root, settings);
  try {
    await body(editor);
  } finally {
    await editor.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

function steerEntries(editor: Editor): SteerEntry[] {
  return editor.client.transcript.entries.filter((e): e is SteerEntry => e.kind === 'steer');
}

function absolutePython(): string {
  const result = spawnSync(PYTHON, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' });
  return result.stdout.trim() || PYTHON;
}

describe('protocol: the real server over vscode-jsonrpc', () => {
  it('agent/run streams agent/event in order and ends with run_finish', TEST, async () => {
    await withEditor(workspace(), { model: 'scripted/demo', script: fixture('run.json') }, async (editor) => {
      const started = await editor.client.run('read a.txt');
      assert.equal(editor.client.snapshot.running, true);
      const finish = await editor.client.waitForFinish(started.generation);
      assert.equal(finish.stopReason, 'final');
      assert.equal(finish.scripted, true);

      const types = editor.eventTypes(started.generation);
      assert.equal(types[0], 'step_start');
      assert.equal(types.at(-1), 'run_finish');
      assert.ok(types.indexOf('tool_use') < types.lastIndexOf('step_start'), `tool_use before the second step: ${types.join(',')}`);
      for (const event of editor.events) {
        assert.equal(event.sessionID, started.sessionID);
      }

      const lines = editor.client.transcript.lines();
      assert.equal(lines[0], '>> read a.txt');
      assert.ok(lines.includes('(thinking) Read the file first.'), lines.join('\n'));
      assert.ok(lines.includes('  ✓ read_file a.txt → OK: a.txt lines 1-1 of 1'), lines.join('\n'));
      assert.ok(lines.includes('a.txt says hello.'), lines.join('\n'));
      assert.match(lines.at(-1)!, /^== stop: final · verification: not_run · 2 steps · 1 tool call \(0 errors\)/);
      assert.ok(lines.some((l) => /^-- step 1\/40 · in [\d,]+ · out \d+/.test(l)), 'step usage shown');

      assert.equal(editor.client.snapshot.running, false);
      const status = await editor.connection.sendRequest(Methods.status, { sessionID: started.sessionID });
      assert.deepEqual(status, { sessionID: started.sessionID, state: 'idle', verification: 'not_run', step: 0 });
    });
  });

  it('settings: initializationOptions and workspace/configuration answers are accepted; a change applies to the next run', TEST, async () => {
    const settings = {
      model: 'scripted/demo',
      script: fixture('run.json'),
      maxSteps: 7,
      providers: { local: { baseUrl: 'http://127.0.0.1:9/v1', wire: 'chat', apiKeyEnv: 'LSP_AGENT_TEST_KEY', headers: { 'X-Test': '1' }, timeoutS: 5, idleTimeoutS: 5, maxRetries: 0 } },
      'experimental.contextRecovery': true,
      'experimental.mcpToolDiscovery': true,
      'experimental.tailReminders': true,
      'experimental.readOnlyRecipes': true,
      python: '/never/sent',
      'trace.server': 'verbose',
    };
    await withEditor(workspace(), settings, async (editor) => {
      const first = await editor.client.run('read a.txt');
      await editor.client.waitForFinish(first.generation);
      await editor.waitFor(() => editor.configurationRequests.length > 0, 'the server to pull workspace/configuration');
      const problems = editor.messages.filter((m) => /settings problems/.test(m.message));
      assert.deepEqual(problems, [], 'the server accepted every mapped setting');
      const start = editor.events.find((e) => e.generation === first.generation && e.event.type === 'step_start');
      assert.ok(start?.event.type === 'step_start' && start.event.maxSteps === 7);

      await editor.changeSettings({ ...settings, maxSteps: 3 });
      await new Promise((resolve) => setTimeout(resolve, 200)); // a notification has no answer to wait for
      const second = await editor.client.run('again');
      await editor.client.waitForFinish(second.generation);
      const next = editor.events.find((e) => e.generation === second.generation && e.event.type === 'step_start');
      assert.ok(next?.event.type === 'step_start' && next.event.maxSteps === 3, 'the pushed maxSteps applies');
    });
  });

  it('settings: a wrong value is passed through and the server reports it once (not once per layer)', TEST, async () => {
    await withEditor(workspace(), { model: 'scripted/demo', script: fixture('run.json'), maxSteps: 0 }, async (editor) => {
      const run = await editor.client.run('read a.txt');
      await editor.client.waitForFinish(run.generation);
      await editor.waitFor(() => editor.messages.length > 0, 'window/showMessage');
      const problems = editor.messages.filter((m) => /maxSteps/.test(m.message));
      assert.equal(problems.length, 1, JSON.stringify(editor.messages));
      const start = editor.events.find((e) => e.event.type === 'step_start');
      assert.ok(start?.event.type === 'step_start' && start.event.maxSteps === 40, 'the default applies');
    });
  });

  it('edits land in the open buffer (applyEdit) and agent/saveDocuments saves them before verify_project', TEST, async () => {
    const check = 'import pathlib, sys\nsys.exit(0 if pathlib.Path("result.txt").read_text().strip() == "4" else 1)\n';
    const config = `[[tools.verify]]\nkind = "test"\nargv = [${JSON.stringify(absolutePython())}, "check.py"]\n`;
    const root = workspace({ 'result.txt': '5', 'check.py': check, '.lsp-agent/config.toml': config });
    await withEditor(root, { model: 'scripted/demo', script: fixture('edit-verify.json') }, async (editor) => {
      const uri = await editor.open('result.txt');
      const run = await editor.client.run('result.txt must hold 4');
      const finish = await editor.client.waitForFinish(run.generation);
      assert.equal(finish.stopReason, 'final');
      assert.deepEqual(editor.saveRequests, [[uri]]);
      assert.equal(editor.text(uri), '4');
      assert.equal(readFileSync(path.join(root, 'result.txt'), 'utf8'), '4');
      assert.equal(finish.verification, 'verified');
      assert.deepEqual(finish.filesChanged, ['result.txt']);
      assert.equal(editor.client.snapshot.verification, 'verified');
    });
  });

  it('steer: the correction is accepted, then applied at the next step boundary', { ...TEST, skip: needs(...STEERING) }, async () => {
    await withEditor(workspace(), { model: 'scripted/demo', script: fixture('steer.json') }, async (editor) => {
      const run = await editor.client.run('read a.txt slowly');
      await editor.waitForEvent((e) => e.generation === run.generation && e.event.type === 'step_start', 'step 1');
      const view = await editor.connection.sendRequest<{ generation: string | null }>(Methods.steering, { sessionID: run.sessionID });
      assert.equal(view.generation, run.generation);

      const receipt = await editor.client.steer('Also count the lines.');
      assert.equal(receipt.status, 'accepted');
      assert.equal(receipt.generation, run.generation);
      const finish = await editor.client.waitForFinish(run.generation);
      assert.equal(finish.stopReason, 'final');
      const [entry] = steerEntries(editor);
      assert.equal(entry?.status, 'applied', 'agent/receipt moved the entry to applied');
      assert.equal(entry.text, 'Also count the lines.');

      const session = await editor.connection.sendRequest<{ messages: { role: string; parts: { text?: string }[] }[] }>(Methods.session, {
        sessionID: run.sessionID,
      });
      const users = session.messages.filter((m) => m.role === 'user').map((m) => m.parts.map((p) => p.text ?? '').join(''));
      assert.deepEqual(users, ['read a.txt slowly', 'Also count the lines.']);

      // Steering after the end is a rejected receipt, not an error.
      await assert.rejects(editor.client.steer('too late'), /Nothing is running/);
      const late = await editor.connection.sendRequest<{ status: string; reason?: string }>(Methods.steer, {
        sessionID: run.sessionID,
        expectedGeneration: run.generation,
        clientID: 'late-1',
        text: 'too late',
      });
      assert.deepEqual([late.status, late.reason], ['rejected', 'generation_not_active']);
    });
  });

  it('queue: add, edit, cancel, steer a row, Steer Now promotes the prefix, sendNow runs next', { ...TEST, skip: needs(...STEERING, ...QUEUE) }, async () => {
    await withEditor(workspace(), { model: 'scripted/demo', script: fixture('queue.json') }, async (editor) => {
      const client = editor.client;
      const run = await client.run('first task');
      await editor.waitForEvent((e) => e.generation === run.generation && e.event.type === 'step_start', 'step 1');

      const a = (await client.queueAdd('follow A')).item!;
      const b = (await client.queueAdd('follow B')).item!;
      const c = (await client.queueAdd('follow C')).item!;
      assert.deepEqual([a.status, b.status, c.status], ['queued', 'queued', 'queued']);
      assert.equal((await client.queueEdit(b.id, 'follow B, edited')).text, 'follow B, edited');
      assert.equal((await client.queueCancel(c.id)).status, 'cancelled');

      // A row changed since it was read is a conflict (-32009, data.status 409).
      const stale = await editor.connection
        .sendRequest(Methods.queueEdit, { taskID: c.id, text: 'x', expectedUpdatedAt: c.updatedAt })
        .then(() => undefined, (error: unknown) => error);
      assert.ok(isConflict(stale), JSON.stringify(errorFacts(stale)));

      const steered = await client.queueSteer(a.id);
      assert.equal(steered.receipt?.status, 'accepted');
      assert.equal(steered.item.status, 'cancelled');
      assert.equal(steered.item.steeredInto, run.generation);

      const outcome = await client.steerNow(''); // ctrl+s with an empty input: the prefix (B)
      assert.ok(outcome.kind === 'promoted');
      assert.deepEqual(outcome.results.map((r) => [r.item.id, r.receipt?.status]), [[b.id, 'accepted']]);

      const d = (await client.queueAdd('follow D')).item!;
      assert.equal((await client.queueSendNow(d.id)).status, 'queued', 'sendNow waits for the running generation');

      const finish = await client.waitForFinish(run.generation);
      assert.equal(finish.stopReason, 'final');
      assert.deepEqual(steerEntries(editor).map((e) => [e.text, e.status]), [
        ['follow A', 'applied'],
        ['follow B, edited', 'applied'],
      ]);

      // D starts the next generation by itself; the transcript shows it as a queued prompt.
      const next = await editor.waitForEvent((e) => e.generation !== run.generation && e.event.type === 'step_start', 'the queued follow-up to start');
      await client.waitForFinish(next.generation);
      assert.ok(client.transcript.lines().includes('>> (queued) follow D'), client.transcript.lines().join('\n'));

      const items = await client.queueList();
      const byId = new Map<string, QueueItem>(items.map((i) => [i.id, i]));
      assert.equal(byId.get(a.id)?.status, 'cancelled');
      assert.ok(byId.get(a.id)?.steeredAppliedAt, 'A was applied');
      assert.ok(byId.get(b.id)?.steeredAppliedAt, 'B was applied');
      assert.equal(byId.get(c.id)?.steeredInto ?? null, null);
      assert.equal(byId.get(d.id)?.status, 'sent');
    });
  });

  it('cancel: the run ends cancelled at once and waiting follow-ups are paused', TEST, async () => {
    await withEditor(workspace(), { model: 'scripted/demo', script: fixture('cancel.json') }, async (editor) => {
      const client = editor.client;
      const run = await client.run('read and wait');
      await editor.waitForEvent((e) => e.generation === run.generation && e.event.type === 'step_start' && e.event.step === 2, 'step 2');
      const queued = needs(...QUEUE) ? undefined : (await client.queueAdd('after the cancel')).item;

      const began = Date.now();
      const answer = await client.cancel();
      assert.deepEqual(answer, { cancelled: true, generation: run.generation });
      const finish = await client.waitForFinish(run.generation, 10_000);
      assert.ok(Date.now() - began < 5_000, 'cancelled promptly');
      assert.deepEqual([finish.stopReason, finish.steps], ['cancelled', 2]);
      assert.equal(client.snapshot.running, false);
      assert.equal(client.snapshot.stopReason, 'cancelled');
      if (queued) {
        await editor.waitFor(() => client.snapshot.queue.find((i) => i.id === queued.id)?.status === 'paused', 'the follow-up to be paused');
      }
      assert.deepEqual(await client.cancel(), { cancelled: false });
    });
  });

  it('compact: agent/compact answers for the session', { ...TEST, skip: needs(Methods.compact) }, async () => {
    await withEditor(workspace(), { model: 'scripted/demo', script: fixture('run.json') }, async (editor) => {
      const run = await editor.client.run('read a.txt');
      await editor.client.waitForFinish(run.generation);
      const result = await editor.client.compact();
      assert.equal(typeof result, 'object');
    });
  });

  it('skill commands: the list, and a proposal refused with its rule over workspace/executeCommand', { ...TEST, skip: needs(SkillMethods.list, SkillMethods.propose) }, async () => {
    const proposal = JSON.stringify({
      name: 'demo-skill',
      description: 'a demo',
      applicability: 'never',
      procedure: 'nothing',
      evidence: { sessionID: 'ses_missing', messageID: 'msg_missing', partID: 'prt_missing' },
    });
    await withEditor(workspace({ 'proposal.json': proposal }), { model: 'scripted/demo' }, async (editor) => {
      const host = new FakeHost();
      const skills = new SkillCommands(host, editor.client, { info: () => undefined, warn: () => undefined, error: () => undefined });
      await skills.list();
      assert.match(host.last('info')!, /No skills or skill candidates/);
      host.document = { uri: pathToFileURL(path.join(editor.root, 'proposal.json')).href, path: 'proposal.json' };
      await skills.propose();
      assert.equal(host.last('error'), undefined, host.last('error'));
      assert.match(host.last('warning')!, /^Propose Skill Candidate refused \([a-z_]+\): /);
    });
  });

  it('an MCP server from the workspace config: a scripted run calls its tool, Show MCP Servers lists it', { ...TEST, skip: needs(MCP_LIST) }, async () => {
    const python = absolutePython();
    const config = `[mcp.servers.time]\ncommand = ${JSON.stringify(python)}\nargs = ["-m", "mcp_server_time"]\nstartupTimeoutMs = 60000\ntrusted = true\n`;
    await withEditor(workspace({ '.lsp-agent/config.toml': config }), { model: 'scripted/demo', script: fixture('mcp.json') }, async (editor) => {
      // A workspace's MCP servers start only once the user trusts its config (trust.ts).
      if (methods.has(WORKSPACE_TRUST)) {
        const shown = await editor.client.send<{ hash: string }>(WORKSPACE_TRUST, { action: 'show' });
        await editor.client.send(WORKSPACE_TRUST, { action: 'trust', hash: shown.hash });
      }
      const run = await editor.client.run('what time is it in UTC?');
      const finish = await editor.client.waitForFinish(run.generation);
      assert.equal(finish.stopReason, 'final');
      const use = editor.events.find((e) => e.generation === run.generation && e.event.type === 'tool_use');
      const part = (use?.event as { part?: { tool: string; state: { status: string; output?: string } } } | undefined)?.part;
      assert.ok(part, 'a tool_use event');
      assert.equal(part.tool, 'mcp__time__get_current_time');
      assert.equal(part.state.status, 'completed');
      assert.match(part.state.output ?? '', /^OK: mcp__time__get_current_time returned 1 content block/);

      const host = new FakeHost();
      await new McpCommands(host, editor.client, { info: () => undefined, warn: () => undefined, error: () => undefined }).list();
      assert.equal(host.last('error'), undefined, host.last('error'));
      assert.deepEqual(host.picks[0]!.map((p) => p.label), ['$(pass) time', '    $(tools) mcp__time__convert_time', '    $(tools) mcp__time__get_current_time']);
    });
  });
});
