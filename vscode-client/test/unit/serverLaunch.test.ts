import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { DEBUGPY_PORT_ENV, explainProbe, probeInterpreter, serverLaunch } from '../../src/serverLaunch.js';

const PYTHON = process.env.LSP_AGENT_PYTHON ?? 'python3';

/** A stand-in interpreter: a shell script that prints `stderr` and exits with `code`. */
function fakeInterpreter(stderr: string, code: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'lsp-agent-fake-python-'));
  const file = path.join(dir, 'python');
  writeFileSync(file, `#!/bin/sh\ncat >&2 <<'END'\n${stderr}\nEND\nexit ${code}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('serverLaunch', () => {
  it('runs `python -m lsp_agent serve` unbuffered in the workspace', () => {
    const spec = serverLaunch('/venv/bin/python', { PATH: '/bin', EMPTY: undefined }, '/ws');
    assert.equal(spec.command, '/venv/bin/python');
    // -P: the workspace folder is not on the import path (its own lsp_agent/ never runs as the server)
    assert.deepEqual(spec.args, ['-P', '-m', 'lsp_agent', 'serve']);
    assert.ok(!('PYTHONSAFEPATH' in spec.env), 'the server\'s children (the user\'s commands) keep the usual path');
    assert.equal(spec.cwd, '/ws');
    assert.equal(spec.env.PYTHONUNBUFFERED, '1');
    assert.equal(spec.env.PATH, '/bin');
    assert.ok(!('EMPTY' in spec.env));
  });

  it('starts under debugpy when LSP_AGENT_DEBUGPY_PORT is set (and ignores a bad port)', () => {
    assert.deepEqual(serverLaunch('python3', { [DEBUGPY_PORT_ENV]: '5678' }).args, [
      '-P', '-m', 'debugpy', '--listen', '127.0.0.1:5678', '-m', 'lsp_agent', 'serve',
    ]);
    assert.deepEqual(serverLaunch('python3', { [DEBUGPY_PORT_ENV]: 'x; rm' }).args, ['-P', '-m', 'lsp_agent', 'serve']);
  });
});

describe('explainProbe', () => {
  const ok = { exitCode: 0, stdout: '0.1.0\n', stderr: '' };

  it('reports the version when the import works', () => {
    assert.deepEqual(explainProbe('python3', ok), { ok: true, version: '0.1.0' });
  });

  it('says how to fix a missing interpreter, a missing package and missing dependencies', () => {
    const missing = explainProbe('/nope/python', { ...ok, spawnError: 'ENOENT', exitCode: null });
    assert.ok(!missing.ok && /"\/nope\/python" was not found\. Fix: set "lspAgent.python"/.test(missing.problem));
    const notInstalled = explainProbe('python3', { exitCode: 1, stdout: '', stderr: "Traceback...\nModuleNotFoundError: No module named 'lsp_agent'\n" });
    assert.ok(!notInstalled.ok && /lsp-agent is not installed for "python3"\. Fix: run "LSP Agent: Set Up a Managed Python Environment"/.test(notInstalled.problem));
    const deps = explainProbe('python3', { exitCode: 1, stdout: '', stderr: "ModuleNotFoundError: No module named 'pygls'" });
    assert.ok(!deps.ok && /dependencies are incomplete .*'pygls'/.test(deps.problem));
    const old = explainProbe('python3', { exitCode: 1, stdout: '', stderr: 'lsp-agent needs Python 3.11 or newer, this is 3.8.10' });
    assert.ok(!old.ok && /too old/.test(old.problem));
  });
});

describe('probeInterpreter (real processes)', () => {
  it(`finds lsp-agent with ${PYTHON}`, async () => {
    const result = await probeInterpreter(PYTHON);
    assert.ok(result.ok, result.ok ? '' : result.problem);
  });

  it('explains an interpreter that does not exist', async () => {
    const result = await probeInterpreter(path.join(tmpdir(), 'no-such-python-here'));
    assert.ok(!result.ok && /was not found/.test(result.problem));
  });

  it('explains an interpreter without lsp-agent', { skip: process.platform === 'win32' }, async () => {
    const fake = fakeInterpreter("ModuleNotFoundError: No module named 'lsp_agent'", 1);
    try {
      const result = await probeInterpreter(fake);
      assert.ok(!result.ok && /lsp-agent is not installed for/.test(result.problem));
    } finally {
      rmSync(path.dirname(fake), { recursive: true, force: true });
    }
  });
});
