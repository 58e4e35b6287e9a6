// First use, with the real bundle against the stand-in `vscode`: a window on a folder that does not
// use lsp-agent starts no Python until the Agent view opens; a workspace whose interpreter lacks
// lsp-agent is offered the managed environment once ("Not Now" is remembered; the command offers
// again); no Python new enough is said with its version and the setting's button.

import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { OFFER_KEY } from '../../src/interpreter.js';
import { bundleExtension, loadBundle, memento, waitFor } from '../helpers/bundledExtension.js';
import type { BundledExtension } from '../helpers/bundledExtension.js';
import { createVscodeStub, noop } from '../helpers/vscodeStub.js';
import type { StubRecord } from '../helpers/vscodeStub.js';


describe('first use', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lsp-agent-first-use-'));
  let bundleText = '';
  let count = 0;

  before(async () => {
    bundleText = await bundleExtension();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function activate(
    ws: string,
    settings: Record<string, unknown>,
    answer?: (text: string, actions: string[]) => string | undefined,
    state = new Map<string, unknown>(),
  ): Promise<{ record: StubRecord; extension: BundledExtension; state: Map<string, unknown>; storage: string }> {
    count += 1;
    // an installed extension: its manifest's version and the wheel it carries
    const extensionDir = path.join(dir, `extension-${count}`);
    mkdirSync(path.join(extensionDir, 'server'), { recursive: true });
    writeFileSync(path.join(extensionDir, 'server', 'lsp_agent-0.1.0-py3-none-any.whl'), '');
    const storage = path.join(dir, `storage-${count}`);
    const stub = createVscodeStub(settings, ws, answer ? { answer } : {});
    const extension = loadBundle(path.join(dir, `bundle-${count}`), bundleText, stub.vscode);
    await extension.activate({
      subscriptions: [],
      extensionUri: { fsPath: extensionDir },
      extension: { packageJSON: { version: '0.1.0' } },
      globalStorageUri: { fsPath: storage },
      workspaceState: memento(),
      globalState: memento(state),
    });
    return { record: stub.record, extension, state, storage };
  }

  function canaryPython(name: string): { python: string; canary: string } {
    const canary = path.join(dir, `${name}-canary`);
    const python = path.join(dir, `${name}-python`);
    writeFileSync(python, `#!/bin/sh\necho ran >> '${canary}'\nexit 1\n`);
    chmodSync(python, 0o755);
    return { python, canary };
  }

  it('a plain folder: the icon and status item, no Python run until the Agent view is opened', async () => {
    const ws = path.join(dir, 'plain');
    mkdirSync(ws, { recursive: true });
    const { python, canary } = canaryPython('plain');
    const { record, extension } = await activate(ws, { python });
    assert.equal(record.statusItems[0]!.text, '$(hubot) Agent: not started');
    assert.equal(existsSync(canary), false, 'a Python ran at activation');
    // a command that needs no server starts none either
    await record.commands.get('lspAgent.showLog')!();
    assert.equal(existsSync(canary), false, 'a Python ran for Show Log');
    record.webviewProviders.get('lspAgent.transcript')!.resolveWebviewView(noop());
    await waitFor(() => existsSync(canary), 'the view to start the server');
    await waitFor(() => record.statusItems[0]!.text === '$(tools) Agent: needs setup', 'the start that needs an environment');
    await extension.deactivate();
  });

  it('a command starts the server too', async () => {
    const ws = path.join(dir, 'command');
    mkdirSync(ws, { recursive: true });
    const { python, canary } = canaryPython('command');
    const { record, extension } = await activate(ws, { python });
    await record.commands.get('lspAgent.runTask')!();
    await waitFor(() => existsSync(canary), 'Run Task to start the server');
    await extension.deactivate();
  });

  it('no lsp-agent: the managed environment is offered once; "Not Now" is kept; the command offers again', async () => {
    const ws = path.join(dir, 'offer');
    mkdirSync(path.join(ws, '.lsp-agent'), { recursive: true });
    writeFileSync(path.join(ws, '.lsp-agent', 'config.toml'), '');
    const offers: string[][] = [];
    const answer = (_text: string, actions: string[]): string | undefined => {
      if (actions.includes('Create Environment')) {
        offers.push(actions);
        return 'Not Now';
      }
      return undefined;
    };
    const first = await activate(ws, { python: path.join(dir, 'no-such-python') }, answer);
    await waitFor(() => first.state.get(OFFER_KEY) === 'declined', 'the offer answered and the answer kept');
    assert.equal(offers.length, 1);
    // the offer gives the reason (without the by-hand fix); no second toast says it again
    assert.match(first.record.messages.find((m) => m.level === 'info')!.text, /^LSP Agent: The Python interpreter ".*no-such-python" was not found\. Create a Python environment for lsp-agent 0\.1\.0 in the extension's storage\?/);
    assert.equal(first.record.messages.filter((m) => m.level === 'error').length, 0);
    assert.equal(first.record.statusItems[0]!.text, '$(tools) Agent: needs setup');
    await first.extension.deactivate();

    // the next window remembers the answer
    const second = await activate(ws, { python: path.join(dir, 'no-such-python') }, answer, first.state);
    await waitFor(() => second.record.messages.some((m) => m.level === 'error'), 'the failed start');
    assert.equal(offers.length, 1, 'asked again after "Not Now"');

    // the command builds even so: with no Python new enough on PATH, it says which one it found
    const bin = path.join(dir, 'old-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, 'python3'), '#!/bin/sh\necho 3.9.18\necho /opt/py39/bin/python3\n');
    chmodSync(path.join(bin, 'python3'), 0o755);
    const savedPath = process.env.PATH;
    process.env.PATH = bin;
    try {
      const errors = second.record.messages.filter((m) => m.level === 'error').length;
      await second.record.commands.get('lspAgent.createManagedEnvironment')!();
      await waitFor(() => second.record.messages.filter((m) => m.level === 'error').length > errors, 'the build to fail');
      assert.equal(second.record.messages.at(-1)!.text, 'LSP Agent: lsp-agent needs Python 3.11 or newer; found 3.9.18 at /opt/py39/bin/python3.');
      assert.equal(existsSync(path.join(second.storage, 'python-env')), false);
    } finally {
      process.env.PATH = savedPath;
    }
    await second.extension.deactivate();
  });
});
