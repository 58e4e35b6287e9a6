import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { KEYED_PROVIDERS, ModelsAndKeys, TYPE_IN_SETTINGS, modelScope, pickerItems, secretName } from '../../src/models.js';
import type { ModelsDeps, PickItem, SettingScope } from '../../src/models.js';
import { MODE_KEY, Modes } from '../../src/modes.js';
import type { ModelsResult, ModeResult } from '../../src/protocol.gen.js';

const LISTED: ModelsResult = {
  current: 'local/coder-7b',
  models: [
    { name: 'local/coder-7b', provider: 'local', source: 'current' },
    { name: 'local/coder-32b', provider: 'local', source: 'server' },
    { name: 'openai/gpt-4.1', provider: 'openai', source: 'known' },
  ],
  providers: [
    { name: 'local', baseUrl: 'http://127.0.0.1:8080/v1', key: 'none', keyEnv: 'LOCAL_KEY', asked: true, models: 2, truncated: false },
    { name: 'openai', baseUrl: 'https://api.openai.com/v1', key: 'none', keyEnv: 'OPENAI_API_KEY', asked: false, models: 0, truncated: false },
    { name: 'ollama', baseUrl: 'http://localhost:11434/v1', key: 'none', keyEnv: 'OLLAMA_API_KEY', asked: true, models: 0, truncated: false,
      failure: { kind: 'connection', message: 'cannot reach http://localhost:11434/v1/models: refused' } },
  ],
};

class Fake {
  readonly sent: { method: string; params: unknown }[] = [];
  readonly answers = new Map<string, unknown[]>();
  readonly picks: PickItem[][] = [];
  pickWith: (items: PickItem[]) => PickItem | undefined = () => undefined;
  secretAnswers: (string | undefined)[] = [];
  readonly said: string[] = [];
  readonly secrets = new Map<string, string>();
  readonly memory = new Map<string, unknown>();
  readonly updates: { value: string; scope: SettingScope }[] = [];
  inspected: { workspaceFolderValue?: unknown; workspaceValue?: unknown; globalValue?: unknown } = {};

  answer(method: string, ...values: unknown[]): this {
    this.answers.set(method, [...(this.answers.get(method) ?? []), ...values]);
    return this;
  }

  deps(): ModelsDeps {
    return {
      send: <T>(method: string, params?: unknown): Promise<T> => {
        this.sent.push({ method, params });
        const next = this.answers.get(method)?.shift();
        return next instanceof Error ? Promise.reject(next) : Promise.resolve(next as T);
      },
      pick: <T extends PickItem>(items: T[]): Promise<T | undefined> => {
        this.picks.push(items);
        return Promise.resolve(this.pickWith(items) as T | undefined);
      },
      askSecret: () => Promise.resolve(this.secretAnswers.shift()),
      openSetting: () => Promise.resolve(this.said.push('opened the setting')),
      info: (m) => Promise.resolve(this.said.push(`info: ${m}`)),
      warn: (m) => Promise.resolve(this.said.push(`warn: ${m}`)),
      setting: {
        inspect: () => this.inspected,
        update: (value, scope) => Promise.resolve(void this.updates.push({ value, scope })),
      },
      secrets: {
        get: (k) => Promise.resolve(this.secrets.get(k)),
        store: (k, v) => Promise.resolve(void this.secrets.set(k, v)),
        delete: (k) => Promise.resolve(void this.secrets.delete(k)),
      },
      memory: {
        get: (k) => this.memory.get(k),
        update: (k, v) => Promise.resolve(void this.memory.set(k, v)),
      },
    };
  }
}

describe('the model picker', () => {
  it('groups models by provider, marks the one in use, and says why a provider has none', () => {
    const items = pickerItems(LISTED);
    const labels = items.map((i) => i.label);
    assert.deepEqual(items.filter((i) => i.kind === 'separator').map((i) => i.label), ['local', 'openai', 'ollama', 'other']);
    assert.ok(labels.includes('$(check) local/coder-7b'));
    const ollamaKey = items.find((i) => i.label.includes('Enter a key for ollama'));
    assert.ok(ollamaKey?.label.startsWith('$(warning)') && ollamaKey.detail?.startsWith('connection: cannot reach'));
    const openaiKey = items.find((i) => i.label.includes('Enter a key for openai'));
    assert.match(openaiKey?.detail ?? '', /not asked/);
  });

  it('writes the chosen model where lspAgent.model is set now, else in the User settings', async () => {
    const fake = new Fake().answer('agent/models', LISTED, LISTED);
    fake.pickWith = (items) => items.find((i) => i.label === 'local/coder-32b');
    const picker = new ModelsAndKeys(fake.deps());
    assert.equal(await picker.chooseModel(), 'local/coder-32b');
    fake.inspected = { workspaceValue: 'local/coder-7b', globalValue: 'openai/gpt-4.1' };
    await picker.chooseModel();
    assert.deepEqual(fake.updates, [{ value: 'local/coder-32b', scope: 'global' }, { value: 'local/coder-32b', scope: 'workspace' }]);
    assert.equal(modelScope({ inspect: () => ({ workspaceFolderValue: 'x' }), update: () => Promise.resolve() }), 'workspaceFolder');
  });

  it('a name the list does not have is typed in the Settings editor', async () => {
    const fake = new Fake().answer('agent/models', LISTED);
    fake.pickWith = (items) => items.find((i) => i.label === TYPE_IN_SETTINGS);
    assert.equal(await new ModelsAndKeys(fake.deps()).chooseModel(), undefined);
    assert.deepEqual(fake.said, ['opened the setting']);
    assert.deepEqual(fake.updates, []);
  });

  it('keeps a key in secret storage, hands it to the server, tests the connection, and never shows it', async () => {
    const fake = new Fake()
      .answer('agent/providerKey', { provider: 'local', keySet: true })
      .answer('agent/models', { ...LISTED, providers: [LISTED.providers[0]] });
    fake.secretAnswers = ['  sk-secret-123  '];
    assert.equal(await new ModelsAndKeys(fake.deps()).setProviderKey('local'), true);
    assert.deepEqual(fake.sent, [
      { method: 'agent/providerKey', params: { provider: 'local', key: 'sk-secret-123' } },
      { method: 'agent/models', params: { provider: 'local' } },
    ]);
    assert.equal(fake.secrets.get(secretName('local')), 'sk-secret-123');
    assert.deepEqual(fake.memory.get(KEYED_PROVIDERS), ['local']);
    assert.deepEqual(fake.said, ['info: LSP Agent: local answers at http://127.0.0.1:8080/v1 — 2 models listed.']);
    assert.ok(![...fake.memory.values(), ...fake.said].some((v) => JSON.stringify(v).includes('sk-secret')));
  });

  it('does not store a key the server refused, and says why', async () => {
    const fake = new Fake().answer('agent/providerKey', new Error('agent/providerKey: the key has a space'));
    fake.secretAnswers = ['bad key'];
    assert.equal(await new ModelsAndKeys(fake.deps()).setProviderKey('local'), false);
    assert.equal(fake.secrets.size, 0);
    assert.match(fake.said[0] ?? '', /^warn: .*was not accepted: agent\/providerKey: the key has a space/);
  });

  it('an empty key forgets it, here and in the server', async () => {
    const fake = new Fake().answer('agent/providerKey', { provider: 'local', keySet: false });
    fake.secrets.set(secretName('local'), 'old');
    fake.memory.set(KEYED_PROVIDERS, ['local']);
    fake.secretAnswers = [''];
    await new ModelsAndKeys(fake.deps()).setProviderKey('local');
    assert.deepEqual(fake.sent, [{ method: 'agent/providerKey', params: { provider: 'local', key: null } }]);
    assert.equal(fake.secrets.size, 0);
    assert.deepEqual(fake.memory.get(KEYED_PROVIDERS), []);
  });

  it('gives the stored keys to a new server process', async () => {
    const fake = new Fake().answer('agent/providerKey', { keySet: true }, { keySet: true });
    fake.memory.set(KEYED_PROVIDERS, ['local', 'gone', 'openai']);
    fake.secrets.set(secretName('local'), 'k1');
    fake.secrets.set(secretName('openai'), 'k2');
    assert.deepEqual(await new ModelsAndKeys(fake.deps()).sendStoredKeys(), ['local', 'openai']);
    assert.deepEqual(fake.sent.map((s) => s.params), [{ provider: 'local', key: 'k1' }, { provider: 'openai', key: 'k2' }]);
  });

  it('a failed connection test is a warning with the classified reason', async () => {
    const fake = new Fake().answer('agent/models', { ...LISTED, providers: [LISTED.providers[2]] });
    await new ModelsAndKeys(fake.deps()).testConnection('ollama');
    assert.deepEqual(fake.said, ['warn: LSP Agent: ollama — connection: cannot reach http://localhost:11434/v1/models: refused']);
  });
});

describe('modes', () => {
  const STATE = (mode: ModeResult['mode']): ModeResult => ({
    mode,
    modes: [
      { id: 'agent', name: 'Agent', description: 'edits' },
      { id: 'plan', name: 'Plan', description: 'plans' },
      { id: 'ask', name: 'Ask', description: 'answers' },
    ],
  });

  it('switches through the server, remembers the mode and restores it on a new server', async () => {
    const fake = new Fake().answer('agent/mode', STATE('agent'), STATE('plan'), STATE('plan'));
    fake.pickWith = (items) => items.find((i) => i.label === 'Plan');
    const deps = fake.deps();
    const modes = new Modes(deps);
    const seen: string[] = [];
    modes.onDidChange((m) => seen.push(m));
    assert.equal(await modes.chooseMode(), 'plan');
    assert.equal(fake.memory.get(MODE_KEY), 'plan');
    const again = new Modes(deps);
    assert.equal(again.mode, 'plan');
    assert.equal(await again.restore(), 'plan');
    assert.deepEqual(fake.sent.map((s) => s.params), [{}, { mode: 'plan' }, { mode: 'plan' }]);
    assert.deepEqual(seen, ['plan']);
  });

  it('a remembered value that is no mode is Agent, and Agent is not re-sent', async () => {
    const fake = new Fake().answer('agent/mode', STATE('agent'));
    fake.memory.set(MODE_KEY, 'full-access');
    const modes = new Modes(fake.deps());
    assert.equal(modes.mode, 'agent');
    await modes.restore();
    assert.deepEqual(fake.sent, [{ method: 'agent/mode', params: {} }]);
  });
});
