import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import {
  EXPERIMENTAL_FLAGS,
  RESTART_KEYS,
  SERVER_KEYS,
  SettingsSync,
  answerConfiguration,
  leafPaths,
  classifyChange,
  didChangeConfigurationParams,
  insideWorkspace,
  userSettingValue,
  pythonCommand,
  serverSettings,
} from '../../src/settings.js';

function reader(values: Record<string, unknown>): (key: string) => unknown {
  return (key) => values[key];
}

describe('serverSettings', () => {
  it('sends nothing when the user set nothing, so .lsp-agent/config.toml decides', () => {
    assert.deepEqual(serverSettings(reader({})), {});
  });

  it('sends model, maxSteps, providers and script as the server spells them', () => {
    const providers = { local: { baseUrl: 'http://localhost:11434/v1', wire: 'chat', apiKeyEnv: 'LOCAL_KEY' } };
    const settings = serverSettings(
      reader({ model: '  ollama/qwen2.5-coder ', maxSteps: 12, providers, script: 'demo.json' }),
    );
    assert.deepEqual(settings, { model: 'ollama/qwen2.5-coder', maxSteps: 12, providers, script: 'demo.json' });
  });

  it('maps the experimental flags to the server names and keeps explicit false', () => {
    const settings = serverSettings(
      reader({ 'experimental.contextRecovery': true, 'experimental.tailReminders': false }),
    );
    assert.deepEqual(settings, { experimental: { context_recovery: true, tail_reminders: false } });
  });

  it('passes the approval policy and its timeout through when set', () => {
    assert.deepEqual(serverSettings(reader({ approvalPolicy: 'untrusted', approvalTimeoutS: 30 })), { approvalPolicy: 'untrusted', approvalTimeoutS: 30 });
    assert.deepEqual(serverSettings(reader({ approvalPolicy: null, approvalTimeoutS: null })), {});
  });

  it('leaves out empty strings, null maxSteps and empty provider maps', () => {
    assert.deepEqual(serverSettings(reader({ model: '  ', maxSteps: null, providers: {}, script: '' })), {});
  });

  it('never sends client-only settings (the server rejects unknown keys)', () => {
    const settings = serverSettings(reader({ python: '/usr/bin/python3', 'trace.server': 'verbose', model: 'scripted/demo' }));
    assert.deepEqual(Object.keys(settings), ['model']);
  });

  it('passes a wrong maxSteps through so the server reports it once', () => {
    assert.deepEqual(serverSettings(reader({ maxSteps: 0 })), { maxSteps: 0 });
  });
});

describe('package.json settings', () => {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, { default?: unknown; markdownDescription?: string; description?: string }> } };
  };
  const properties = manifest.contributes.configuration.properties;

  it('every contributed setting is mapped to the server or is client-only', () => {
    const known = new Set<string>([
      ...SERVER_KEYS.filter((k) => k !== 'experimental').map((k) => `lspAgent.${k}`),
      ...RESTART_KEYS.map((k) => `lspAgent.${k}`),
      ...Object.keys(EXPERIMENTAL_FLAGS).map((k) => `lspAgent.experimental.${k}`),
      'lspAgent.trace.server',
    ]);
    assert.deepEqual(Object.keys(properties).sort(), [...known].sort());
  });

  it('every setting has a description and a default', () => {
    for (const [key, schema] of Object.entries(properties)) {
      assert.ok(schema.markdownDescription ?? schema.description, `${key} has no description`);
      assert.ok('default' in schema, `${key} has no default`);
    }
  });
});

describe('pythonCommand', () => {
  it('defaults to python3, or python on Windows', () => {
    assert.equal(pythonCommand('', { platform: 'linux' }), 'python3');
    assert.equal(pythonCommand(undefined, { platform: 'win32' }), 'python');
  });

  it('expands ${workspaceFolder}, ${userHome}, ${env:NAME} and ~', () => {
    const context = { platform: 'linux' as const, workspaceFolder: '/ws', home: '/home/me', env: { VENV: '/opt/venv' } };
    assert.equal(pythonCommand('${workspaceFolder}/.venv/bin/python', context), '/ws/.venv/bin/python');
    assert.equal(pythonCommand('${userHome}/py/bin/python', context), '/home/me/py/bin/python');
    assert.equal(pythonCommand('${env:VENV}/bin/python', context), '/opt/venv/bin/python');
    assert.equal(pythonCommand('~/bin/python', context), '/home/me/bin/python');
  });

  it('resolves a relative path against the workspace, but leaves a bare name to PATH', () => {
    const context = { platform: 'linux' as const, workspaceFolder: '/ws' };
    assert.equal(pythonCommand('.venv/bin/python', context), '/ws/.venv/bin/python');
    assert.equal(pythonCommand('python3.12', context), 'python3.12');
  });
});

describe('classifyChange', () => {
  it('restarts for a new interpreter and pushes server settings otherwise', () => {
    assert.deepEqual(classifyChange((s) => s === 'lspAgent.python'), { restart: true, push: false });
    assert.deepEqual(classifyChange((s) => s === 'lspAgent.editorQueries.enabled'), { restart: true, push: false });
    assert.deepEqual(classifyChange((s) => s === 'lspAgent.model'), { restart: false, push: true });
    assert.deepEqual(classifyChange((s) => s === 'lspAgent.experimental'), { restart: false, push: true });
    assert.deepEqual(classifyChange((s) => s === 'lspAgent.trace.server'), { restart: false, push: false });
    assert.deepEqual(classifyChange(() => false), { restart: false, push: false });
  });
});

describe('configuration answers', () => {
  const settings = { model: 'scripted/demo', experimental: { context_recovery: true } };

  it('answers the lspAgent section (and its sub-keys) with the mapped settings', () => {
    const answer = answerConfiguration(
      [{ section: 'lspAgent' }, { section: 'lspAgent.model' }, { section: 'lspAgent.experimental.context_recovery' }, { section: 'lspAgent.nope' }],
      settings,
      () => 'fallback',
    );
    assert.deepEqual(answer, [settings, 'scripted/demo', true, null]);
  });

  it('uses the fallback for other sections, by position', () => {
    const answer = answerConfiguration([{ section: 'editor' }, { section: 'lspAgent' }, {}], settings, (section, index) => `${section ?? '-'}#${index}`);
    assert.deepEqual(answer, ['editor#0', settings, '-#2']);
  });

  it('wraps settings for workspace/didChangeConfiguration under lspAgent', () => {
    assert.deepEqual(didChangeConfigurationParams(settings), { settings: { lspAgent: settings } });
  });
});

describe('SettingsSync', () => {
  it('answers the configuration pull with null while nothing changed since initialize', () => {
    const sync = new SettingsSync();
    const start = { model: 'scripted/demo', maxSteps: 7 };
    assert.equal(sync.initializationOptions(start), start);
    assert.equal(sync.section({ maxSteps: 7, model: 'scripted/demo' }), null);
    assert.deepEqual(sync.section({ model: 'scripted/demo', maxSteps: 8 }), { model: 'scripted/demo', maxSteps: 8 });
    assert.deepEqual(answerConfiguration([{ section: 'lspAgent' }, { section: 'lspAgent.model' }], null, () => 'x'), [null, null]);
  });

  it('pushes changed and added values as the new section', () => {
    const sync = new SettingsSync();
    sync.initializationOptions({ maxSteps: 7, experimental: { context_recovery: true } });
    assert.deepEqual(sync.plan({ maxSteps: 3, model: 'ollama/x', experimental: { context_recovery: false } }), {
      kind: 'push',
      params: { settings: { lspAgent: { maxSteps: 3, model: 'ollama/x', experimental: { context_recovery: false } } } },
    });
  });

  it('asks for a restart when a value sent at initialize was cleared (a section cannot remove it)', () => {
    const sync = new SettingsSync();
    sync.initializationOptions({ maxSteps: 7, providers: { local: { baseUrl: 'u', headers: { A: '1' } } } });
    assert.deepEqual(sync.plan({ providers: { local: { baseUrl: 'u' } } }), { kind: 'restart', removed: ['maxSteps', 'providers.local.headers.A'] });
  });

  it('leafPaths lists nested keys, keeping empty objects as leaves', () => {
    assert.deepEqual(leafPaths({ a: 1, b: { c: true, d: {} } }), ['a', 'b.c', 'b.d']);
    assert.deepEqual(leafPaths({}), []);
  });
});

describe('Restricted Mode settings', () => {
  const inspected = { globalValue: 'user', workspaceValue: 'repo', workspaceFolderValue: 'folder' };

  it('a trusted workspace: the most specific scope wins', () => {
    assert.equal(userSettingValue('python', inspected, true), 'folder');
    assert.equal(userSettingValue('model', { globalValue: 'user', workspaceValue: 'repo' }, true), 'repo');
  });

  it("untrusted: a restricted setting comes from the user's own settings only; others as before", () => {
    for (const key of ['python', 'model', 'providers', 'maxSteps', 'script', 'approvalPolicy', 'approvalTimeoutS']) {
      assert.equal(userSettingValue(key, inspected, false), 'user', key);
    }
    assert.equal(userSettingValue('providers', { workspaceValue: { evil: {} } }, false), undefined);
    assert.equal(userSettingValue('experimental.tailReminders', inspected, false), 'folder');
    assert.equal(userSettingValue('python', undefined, false), undefined);
  });

  it('an interpreter inside the workspace is recognised (also through ..), one beside it is not', () => {
    assert.equal(insideWorkspace('/w/ws/.venv/bin/python', '/w/ws'), true);
    assert.equal(insideWorkspace('/w/ws/a/../evil', '/w/ws'), true);
    assert.equal(insideWorkspace('/w/ws-other/python', '/w/ws'), false);
    assert.equal(insideWorkspace('/usr/bin/python3', '/w/ws'), false);
    assert.equal(insideWorkspace('python3', '/w/ws'), false);
    assert.equal(insideWorkspace('/w/ws/x', undefined), false);
  });
});
