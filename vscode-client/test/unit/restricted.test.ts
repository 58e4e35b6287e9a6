// Restricted Mode, as the attack: a repository whose `.vscode/settings.json` names its own program as
// `lspAgent.python` (which the extension would start) is opened in an untrusted window. The real
// bundle is activated against the stand-in `vscode`; the program would write a canary file.

import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import * as esbuild from 'esbuild';

import { RESTRICTED_KEYS } from '../../src/settings.js';
import { createVscodeStub } from '../helpers/vscodeStub.js';
import type { StubRecord } from '../helpers/vscodeStub.js';

const ROOT = path.join(__dirname, '..', '..', '..');

interface Extension {
  activate(context: unknown): Promise<void>;
  deactivate(): Promise<void>;
}

async function waitFor(probe: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!probe()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('Restricted Mode: the workspace cannot choose the program the extension starts', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lsp-agent-restricted-'));
  let bundleText = '';

  before(async () => {
    const bundle = await esbuild.build({
      entryPoints: [path.join(ROOT, 'src', 'extension.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: ['vscode'],
      write: false,
      logLevel: 'silent',
    });
    bundleText = bundle.outputFiles[0]!.text;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A hostile workspace (its own "interpreter" writes `canary`), activated with these settings. */
  async function open(
    name: string,
    trusted: boolean,
    userSettings: (ws: string) => Record<string, unknown>,
    workspaceSettings: (ws: string) => Record<string, unknown>,
  ): Promise<{ record: StubRecord; canary: string; extension: Extension }> {
    const case_ = path.join(dir, name);
    const ws = path.join(case_, 'ws');
    mkdirSync(path.join(ws, '.lsp-agent'), { recursive: true });
    // lsp-agent config (which also activates the extension): a failed start is then said in a notification
    writeFileSync(path.join(ws, '.lsp-agent', 'config.toml'), '');
    const canary = path.join(case_, 'canary');
    writeFileSync(path.join(ws, 'evil-python'), `#!/bin/sh\necho ran > '${canary}'\nexit 1\n`);
    chmodSync(path.join(ws, 'evil-python'), 0o755);
    const bundleDir = path.join(case_, 'bundle');
    mkdirSync(path.join(bundleDir, 'node_modules', 'vscode'), { recursive: true });
    writeFileSync(path.join(bundleDir, 'extension.js'), bundleText);
    writeFileSync(path.join(bundleDir, 'node_modules', 'vscode', 'index.js'), 'module.exports = globalThis.__lspAgentVscodeStub;\n');
    const stub = createVscodeStub(userSettings(ws), ws, { trusted, workspaceSettings: workspaceSettings(ws) });
    (globalThis as Record<string, unknown>).__lspAgentVscodeStub = stub.vscode;
    const extension = createRequire(__filename)(path.join(bundleDir, 'extension.js')) as Extension;
    const state = new Map<string, unknown>();
    await extension.activate({
      subscriptions: [],
      extensionUri: { fsPath: ROOT },
      workspaceState: { get: (key: string) => state.get(key), update: (key: string, value: unknown) => Promise.resolve(state.set(key, value)) },
    });
    await waitFor(() => stub.record.messages.some((m) => m.level === 'error'), 'the start to fail');
    return { record: stub.record, canary, extension };
  }

  const missing = (ws: string): string => path.join(ws, '..', 'no-such-python');

  it('untrusted: the workspace value of lspAgent.python is ignored; the user\'s own is used', async () => {
    const { record, canary, extension } = await open('workspace-value', false, (ws) => ({ python: missing(ws) }), () => ({ python: './evil-python' }));
    assert.equal(existsSync(canary), false, 'the repository\'s program ran');
    assert.match(record.messages.find((m) => m.level === 'error')!.text, /no-such-python/);
    await extension.deactivate();
  });

  it('untrusted: even the user\'s own setting may not point inside the workspace', async () => {
    const { record, canary, extension } = await open('user-value-inside', false, () => ({ python: '${workspaceFolder}/evil-python' }), () => ({}));
    assert.equal(existsSync(canary), false, 'the repository\'s program ran');
    assert.match(record.messages.find((m) => m.level === 'error')!.text, /Restricted Mode and lspAgent\.python .* lies inside the workspace/);
    await extension.deactivate();
  });

  it('trusted (the control): the workspace value applies, so the same program does run', async () => {
    const { canary, extension } = await open('trusted', true, (ws) => ({ python: missing(ws) }), () => ({ python: './evil-python' }));
    assert.equal(readFileSync(canary, 'utf8'), 'ran\n');
    await extension.deactivate();
  });

  it('the manifest restricts exactly the settings the code reads as restricted, and supports limited mode', () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      capabilities: { untrustedWorkspaces: { supported: unknown; description: string; restrictedConfigurations: string[] } };
      activationEvents: string[];
    };
    const untrusted = manifest.capabilities.untrustedWorkspaces;
    assert.equal(untrusted.supported, 'limited');
    assert.match(untrusted.description, /Restricted Mode/);
    assert.deepEqual([...untrusted.restrictedConfigurations].sort(), RESTRICTED_KEYS.map((k) => `lspAgent.${k}`).sort());
  });
});
