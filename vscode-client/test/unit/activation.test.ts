// Loads the real esbuild bundle with a stand-in `vscode` module and runs activate(): every
// command, view and keybinding the manifest contributes must be wired in the code (and the
// other way round), and a missing interpreter must end in a clear message, not a crash.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { INPUT_FOCUS_CONTEXT } from '../../src/commands.js';
import { REVIEWING_CONTEXT } from '../../src/review.js';
import { CLIENT_ROOT, bundleExtension, loadBundle, memento, waitFor } from '../helpers/bundledExtension.js';
import type { BundledExtension } from '../helpers/bundledExtension.js';
import { createVscodeStub } from '../helpers/vscodeStub.js';
import type { StubRecord } from '../helpers/vscodeStub.js';

const ROOT = CLIENT_ROOT;

interface Manifest {
  main: string;
  activationEvents: string[];
  contributes: {
    commands: { command: string; title: string; category: string }[];
    keybindings: { command: string; key: string; mac: string; when: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
    views: Record<string, { id: string; type?: string }[]>;
  };
}

const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;

describe('the bundled extension, activated against a stand-in vscode', () => {
  let record: StubRecord;
  let extension: BundledExtension;
  const dir = mkdtempSync(path.join(tmpdir(), 'lsp-agent-bundle-'));

  after(() => rmSync(dir, { recursive: true, force: true }));

  before(async () => {
    const bundleText = await bundleExtension();
    // a workspace with lsp-agent config: a failed start is said in a notification (elsewhere only in the status item and the welcome view)
    mkdirSync(path.join(dir, '.lsp-agent'), { recursive: true });
    writeFileSync(path.join(dir, '.lsp-agent', 'config.toml'), '');
    const stub = createVscodeStub({ python: path.join(dir, 'no-such-python') }, dir);
    record = stub.record;
    extension = loadBundle(dir, bundleText, stub.vscode);
    await extension.activate({ subscriptions: [], extensionUri: { fsPath: ROOT }, workspaceState: memento() });
  });

  it('registers exactly the commands the manifest contributes', () => {
    const contributed = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual([...record.commands.keys()].sort(), contributed);
    for (const command of manifest.contributes.commands) {
      assert.equal(command.category, 'LSP Agent', `${command.command} is under "LSP Agent:"`);
    }
  });

  it('menus and keybindings only name contributed commands', () => {
    const contributed = new Set(manifest.contributes.commands.map((c) => c.command));
    const named = [...Object.values(manifest.contributes.menus).flat(), ...manifest.contributes.keybindings].map((m) => m.command);
    for (const command of named) {
      assert.ok(contributed.has(command), `${command} is contributed`);
    }
  });

  it('binds Steer Now to ctrl+s / cmd+s only while the agent input or its views have focus', () => {
    const binding = manifest.contributes.keybindings.find((k) => k.command === 'lspAgent.steerNow');
    assert.ok(binding);
    assert.deepEqual([binding.key, binding.mac], ['ctrl+s', 'cmd+s']);
    assert.ok(binding.when.includes(INPUT_FOCUS_CONTEXT));
    assert.equal(record.contexts.get(INPUT_FOCUS_CONTEXT), false, 'the context key starts false');
  });

  it('provides every contributed view', () => {
    const views = Object.values(manifest.contributes.views).flat();
    assert.deepEqual(record.webviewViews, views.filter((v) => v.type === 'webview').map((v) => v.id));
    assert.deepEqual([...record.treeViews].sort(), views.filter((v) => v.type !== 'webview').map((v) => v.id).sort());
    // one status item for everything: state and step, Stop (in its tooltip), the ignored project config, notes
    assert.equal(record.statusItems.length, 1);
    // the before-text of Review Changes' diffs
    assert.deepEqual(record.contentProviders, ['lsp-agent-before']);
  });

  it('sets the context keys its menus use (running, reviewing) to false at start', () => {
    assert.equal(record.contexts.get('lspAgent.running'), false);
    assert.equal(record.contexts.get(REVIEWING_CONTEXT), false);
    const whens = Object.values(manifest.contributes.menus).flat().map((m) => m.when ?? '').join(' ');
    assert.ok(whens.includes(REVIEWING_CONTEXT), 'the review actions show only while reviewing');
  });

  it('explains a missing interpreter with the fix, and the status bar says the server failed', async () => {
    await waitFor(() => record.messages.some((m) => m.level === 'error'), 'the error message');
    const error = record.messages.find((m) => m.level === 'error');
    assert.match(error!.text, /^LSP Agent: The Python interpreter ".*no-such-python" was not found\. Fix: set "lspAgent.python"/);
    assert.equal(record.statusItems[0]!.text, '$(warning) Agent: server failed');
    // the welcome view for a missing server shows (package.json's viewsWelcome)
    assert.equal(record.contexts.get('lspAgent.setup'), 'noServer');
  });

  it('a task given without a server waits, visibly, instead of being thrown away', async () => {
    await record.commands.get('lspAgent.runTask')!();
    assert.match(record.statusItems[0]!.text, /Agent: server failed · 1 waiting · prompt waiting for the server/);
    assert.ok(!record.messages.some((m) => m.level === 'error' && /Run Task/.test(m.text)), 'no error: the prompt is kept');
  });

  it('Review Changes and Open Past Session are wired: no run yet / no server are said, not thrown', async () => {
    await record.commands.get('lspAgent.reviewChanges')!();
    assert.equal(record.messages.at(-1)!.text, 'LSP Agent: no changed files to review (no run in this window changed files).');
    await record.commands.get('lspAgent.review.revert')!({ scheme: 'file', fsPath: '/x' }); // a Uri from the editor title
    assert.equal(record.messages.at(-1)!.text, 'LSP Agent: no changed files to review (no run in this window changed files).');
    await record.commands.get('lspAgent.openSession')!();
    assert.match(record.messages.at(-1)!.text, /server is not running/);
  });

  it('deactivates cleanly', async () => {
    await extension.deactivate();
  });
});
