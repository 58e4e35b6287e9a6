// Against the real server: the extension's version at initialize. The client recognises the
// server's own mismatch warning (if the server rewords it, this goes red), and the same release
// says nothing.

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';

import { isVersionMismatchMessage } from '../../src/interpreter.js';
import { isNoModelMessage } from '../../src/readiness.js';
import { probeInterpreter } from '../../src/serverLaunch.js';
import { Editor, PYTHON, workspace } from './harness.js';

const TEST = { timeout: 90_000 };

describe('protocol: versions at initialize (real server)', () => {
  it('another release: the server\'s warning is the one the client shows with its button', TEST, async () => {
    const root = workspace({});
    const editor = await Editor.start(root, {}, {}, { clientVersion: '99.0.0' });
    try {
      const said = await editor.waitFor(() => editor.messages.find((m) => isVersionMismatchMessage(m.message)), 'the mismatch warning');
      assert.match(said.message, /^lsp-agent: the extension is 99\.0\.0, the server at .+ is .+: update it/);
      assert.equal(said.type, 2);
    } finally {
      await editor.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('the same release: no warning (it would come before the no-model message)', TEST, async () => {
    const probe = await probeInterpreter(PYTHON);
    assert.ok(probe.ok, JSON.stringify(probe));
    const root = workspace({});
    const editor = await Editor.start(root, {}, {}, { clientVersion: probe.version });
    try {
      await editor.waitFor(() => editor.messages.find((m) => isNoModelMessage(m.message)), 'the no-model message');
      assert.deepEqual(editor.messages.filter((m) => isVersionMismatchMessage(m.message)), []);
    } finally {
      await editor.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
