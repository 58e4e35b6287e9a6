import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { AgentClient } from '../../src/agentClient.js';
import { EXECUTE_COMMAND, SkillMethods } from '../../src/protocol.js';
import type { SkillCandidate, SkillListResult, SkillResult } from '../../src/protocol.js';
import {
  SkillCommands,
  candidatePicks,
  executeParams,
  listPicks,
  promotable,
  retirable,
  skillOutcome,
  validatable,
} from '../../src/skills.js';
import { FakeHost, FakeRpc, rpcError } from '../helpers/fakes.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

function candidate(name: string, state: SkillCandidate['state'], validated = false): SkillCandidate {
  const source = { sessionID: 'ses_a', messageID: 'msg_a', partID: 'prt_a', digest: 'd', revision: 'r', fingerprint: 'f' };
  return { name, state, validated, description: `how to ${name}`, applicability: 'always', procedure: 'do it', source,
    createdAt: 1, updatedAt: 1 };
}

const CANDIDATES = [
  candidate('fresh', 'pending'),
  candidate('checked', 'pending', true),
  candidate('live', 'active', true),
  candidate('half-gone', 'retiring', true),
  candidate('gone', 'retired', true),
];
const LIST: SkillListResult = { candidates: CANDIDATES, skills: [{ name: 'live', description: 'how to live', path: '.lsp-agent/skills/live/SKILL.md' }] };
const OK: SkillResult = { ok: true, message: 'done', changed: true };

function setup(): { host: FakeHost; rpc: FakeRpc; client: AgentClient; skills: SkillCommands } {
  const rpc = new FakeRpc();
  const client = new AgentClient({ newClientID: () => 'client-1' });
  client.attach(rpc);
  const host = new FakeHost();
  return { host, rpc, client, skills: new SkillCommands(host, client, silent) };
}

describe('which candidates each skill command offers', () => {
  it('validate offers pending candidates without evidence yet', () => {
    assert.deepEqual(validatable(CANDIDATES).map((c) => c.name), ['fresh']);
  });

  it('promote offers validated pending candidates only', () => {
    assert.deepEqual(promotable(CANDIDATES).map((c) => c.name), ['checked']);
  });

  it('retire offers everything not retired yet', () => {
    assert.deepEqual(retirable(CANDIDATES).map((c) => c.name), ['fresh', 'checked', 'live', 'half-gone']);
  });

  it('picks show the name, the state (validated or not) and the description', () => {
    const [fresh, checked] = candidatePicks(CANDIDATES);
    assert.deepEqual([fresh!.label, fresh!.description, fresh!.detail], ['fresh', 'pending', 'how to fresh']);
    assert.equal(checked!.description, 'pending (validated)');
  });

  it('the list shows the skills first, then every candidate', () => {
    const picks = listPicks(LIST);
    assert.deepEqual(picks.map((p) => p.label), ['$(book) live', ...CANDIDATES.map((c) => `$(beaker) ${c.name}`)]);
    assert.equal(picks[0]!.description, '.lsp-agent/skills/live/SKILL.md');
  });

  it('server commands carry their params as the single argument', () => {
    assert.deepEqual(executeParams('lsp-agent.skill.promote', { name: 'x' }), { command: 'lsp-agent.skill.promote', arguments: [{ name: 'x' }] });
  });

  it('a refusal names the rule that failed', () => {
    assert.deepEqual(skillOutcome('Promote', { ok: false, rule: 'not_validated', message: 'validate it first', changed: false }), {
      ok: false,
      text: 'Promote refused (not_validated): validate it first',
    });
    assert.deepEqual(skillOutcome('Promote', OK), { ok: true, text: 'Promote: done' });
  });
});

describe('the skill commands', () => {
  it('Propose sends the active editor\'s URI to lsp-agent.skill.propose', async () => {
    const { host, rpc, skills } = setup();
    host.document = { uri: 'file:///w/proposal.json', path: 'proposal.json' };
    rpc.answer(EXECUTE_COMMAND, { ...OK, message: 'candidate fresh proposed' });
    await skills.propose();
    assert.deepEqual(rpc.sent.at(-1), {
      method: EXECUTE_COMMAND,
      params: { command: 'lsp-agent.skill.propose', arguments: [{ uri: 'file:///w/proposal.json' }] },
    });
    assert.equal(host.last('info'), 'Propose Skill Candidate: candidate fresh proposed');
  });

  it('Propose without an editor explains what to open, and sends nothing', async () => {
    const { host, rpc, skills } = setup();
    await skills.propose();
    assert.equal(rpc.sent.length, 0);
    assert.match(host.last('warning')!, /Open the proposal JSON/);
  });

  it('Validate picks a pending candidate, then the active editor as evidence', async () => {
    const { host, rpc, skills } = setup();
    host.document = { uri: 'file:///w/validation.json', path: 'validation.json' };
    rpc.answer(SkillMethods.list, LIST).answer(EXECUTE_COMMAND, OK);
    host.pickIndexes = [0, 0];
    await skills.validate();
    assert.deepEqual(host.picks[0]!.map((p) => p.label), ['fresh']);
    assert.deepEqual(rpc.sent.at(-1)!.params, { command: 'lsp-agent.skill.validate', arguments: [{ name: 'fresh', uri: 'file:///w/validation.json' }] });
  });

  it('Validate can take the evidence from a file dialog instead', async () => {
    const { host, rpc, skills } = setup();
    host.document = { uri: 'file:///w/other.py', path: 'other.py' };
    host.fileAnswer = 'file:///tmp/validation.json';
    rpc.answer(SkillMethods.list, LIST).answer(EXECUTE_COMMAND, OK);
    host.pickIndexes = [0, 1];
    await skills.validate();
    assert.equal(host.fileDialogs.length, 1);
    assert.deepEqual(rpc.sent.at(-1)!.params, { command: 'lsp-agent.skill.validate', arguments: [{ name: 'fresh', uri: 'file:///tmp/validation.json' }] });
  });

  it('Validate with no editor goes straight to the dialog; cancelling it sends nothing', async () => {
    const { host, rpc, skills } = setup();
    rpc.answer(SkillMethods.list, LIST);
    await skills.validate();
    assert.equal(host.fileDialogs.length, 1);
    assert.deepEqual(rpc.methods(), [SkillMethods.list]);
  });

  it('Promote offers validated candidates and runs lsp-agent.skill.promote (the server opens SKILL.md)', async () => {
    const { host, rpc, skills } = setup();
    rpc.answer(SkillMethods.list, LIST).answer(EXECUTE_COMMAND, { ...OK, message: 'promoted', uri: 'file:///w/.lsp-agent/skills/checked/SKILL.md' });
    await skills.promote();
    assert.deepEqual(host.picks[0]!.map((p) => p.label), ['checked']);
    assert.deepEqual(rpc.sent.at(-1)!.params, { command: 'lsp-agent.skill.promote', arguments: [{ name: 'checked' }] });
    assert.equal(host.last('info'), 'Promote Skill Candidate: promoted');
  });

  it('Promote with nothing validated says so without a pick', async () => {
    const { host, rpc, skills } = setup();
    rpc.answer(SkillMethods.list, { candidates: [candidate('fresh', 'pending')], skills: [] });
    await skills.promote();
    assert.equal(host.picks.length, 0);
    assert.match(host.last('warning')!, /No validated candidate/);
  });

  it('Retire sends agent/skill/retire and warns with the rule when refused', async () => {
    const { host, rpc, skills } = setup();
    rpc.answer(SkillMethods.list, LIST).answer(SkillMethods.retire, { ok: false, rule: 'skill_modified', message: 'SKILL.md was edited', changed: false });
    host.pickIndexes = [2];
    await skills.retire();
    assert.deepEqual(rpc.sent.at(-1), { method: SkillMethods.retire, params: { name: 'live' } });
    assert.equal(host.last('warning'), 'Retire Skill refused (skill_modified): SKILL.md was edited');
  });

  it('cancelling the candidate pick sends nothing more', async () => {
    const { host, rpc, skills } = setup();
    rpc.answer(SkillMethods.list, LIST);
    host.pickIndexes = [-1];
    await skills.retire();
    assert.deepEqual(rpc.methods(), [SkillMethods.list]);
  });

  it('List Skills shows skills and candidates in a quick pick, or says there are none', async () => {
    const { host, rpc, skills } = setup();
    rpc.answer(SkillMethods.list, LIST).answer(SkillMethods.list, { candidates: [], skills: [] });
    await skills.list();
    assert.equal(host.picks[0]!.length, 6);
    await skills.list();
    assert.match(host.last('info')!, /No skills/);
  });

  it('an older server without skills gets a clear warning', async () => {
    const { host, rpc, skills } = setup();
    rpc.answer(SkillMethods.list, rpcError(-32601, 'Method Not Found: agent/skill/list'));
    await skills.list();
    assert.equal(host.last('warning'), 'List Skills: this lsp-agent server does not support it yet (update lsp-agent).');
  });

  it('agent/skill/changed updates the skills the client knows', () => {
    const { rpc, client } = setup();
    assert.equal(client.skills, undefined);
    rpc.notify('agent/skill/changed', { skills: LIST.skills });
    assert.deepEqual(client.skills, LIST.skills);
  });
});
