// Restricted Mode, as the attack: a repository whose `.vscode/settings.json` names its own program as
// `lspAgent.python` (which the extension would start) is opened in an untrusted window. The real
// bundle is activated against the stand-in `vscode`; the program would write a canary file.

import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { RESTRICTED_KEYS } from '../../src/settings.js';
import { CLIENT_ROOT, bundleExtension, loadBundle, memento, waitFor } from '../helpers/bundledExtension.js';
import type { BundledExtension } from '../helpers/bundledExtension.js';
import { createVscodeStub } from '../helpers/vscodeStub.js';
import type { StubRecord } from '../helpers/vscodeStub.js';

const ROOT = CLIENT_ROOT;

describe('Restricted Mode: the workspace cannot choose the program the extension starts', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lsp-agent-restricted-'));
  let bundleText = '';

  before(async () => {
    bundleText = await bundleExtension();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A hostile workspace (its own "interpreter" writes `canary`), activated with these settings. */
  async function open(
    name: string,
    trusted: boolean,
    userSettings: (ws: string) => Record<string, unknown>,
    workspaceSettings: (ws: string) => Record<string, unknown>,
  ): Promise<{ record: StubRecord; canary: string; extension: BundledExtension }> {
    const case_ = path.join(dir, name);
    const ws = path.join(case_, 'ws');
    mkdirSync(path.join(ws, '.lsp-agent'), { recursive: true });
    // lsp-agent config (which also activates the extension): a failed start is then said in a notification
    writeFileSync(path.join(ws, '.lsp-agent', 'config.toml'), '');
    const canary = path.join(case_, 'canary');
    writeFileSync(path.join(ws, 'evil-python'), `#!/bin/sh\necho ran > '${canary}'\nexit 1\n`);
    chmodSync(path.join(ws, 'evil-python'), 0o755);
    const stub = createVscodeStub(userSettings(ws), ws, { trusted, workspaceSettings: workspaceSettings(ws) });
    const extension = loadBundle(path.join(case_, 'bundle'), bundleText, stub.vscode);
    await extension.activate({ subscriptions: [], extensionUri: { fsPath: ROOT }, workspaceState: memento() });
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
