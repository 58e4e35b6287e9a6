// Which interpreter runs the server: the Python extension's, then lspAgent.python, then the managed
// environment; a mismatched or missing lsp-agent falls through; in Restricted Mode a candidate
// inside the workspace never runs; the offer is made once. And the workspace's own `lsp_agent/`
// never shadows the installed one when the probe runs in the workspace folder.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';

import {
  chooseInterpreter,
  isVersionMismatchMessage,
  mismatchProblem,
  offerDecision,
  offerMessage,
  pythonExtensionInterpreter,
  versionsMatch,
} from '../../src/interpreter.js';
import type { Candidate, PythonExtensionApi } from '../../src/interpreter.js';
import type { ProbeResult } from '../../src/serverLaunch.js';
import { probeInterpreter, serverLaunch } from '../../src/serverLaunch.js';

const PYTHON = process.env.LSP_AGENT_PYTHON ?? 'python3';
const scratch = mkdtempSync(path.join(tmpdir(), 'lsp-agent-interpreter-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function fakeApi(executable: string | undefined, options: { throws?: boolean; resolves?: boolean } = {}): PythonExtensionApi {
  return {
    environments: {
      getActiveEnvironmentPath: () => {
        if (options.throws) {
          throw new Error('not ready');
        }
        return { id: 'x', path: executable ?? '' };
      },
      resolveEnvironment: () => Promise.resolve(options.resolves === false || executable === undefined ? undefined : { executable: { uri: { fsPath: executable } } }),
    },
  };
}

describe('pythonExtensionInterpreter (the Python extension as a plain object)', () => {
  it('its active environment\'s executable', async () => {
    assert.equal(await pythonExtensionInterpreter(fakeApi('/venv/bin/python')), '/venv/bin/python');
    assert.equal(await pythonExtensionInterpreter(fakeApi('/venv/bin/python', { resolves: false })), '/venv/bin/python');
  });

  it('absent, without the API, failing or empty: no candidate, no error', async () => {
    assert.equal(await pythonExtensionInterpreter(undefined), undefined);
    assert.equal(await pythonExtensionInterpreter({}), undefined);
    assert.equal(await pythonExtensionInterpreter(fakeApi('/x', { throws: true })), undefined);
    assert.equal(await pythonExtensionInterpreter(fakeApi('')), undefined);
  });
});

function probes(table: Record<string, ProbeResult>): { probe: (python: string) => Promise<ProbeResult>; ran: string[] } {
  const ran: string[] = [];
  return {
    ran,
    probe: (python) => {
      ran.push(python);
      return Promise.resolve(table[python] ?? { ok: false, problem: `${python}: lsp-agent is not installed` });
    },
  };
}

const base = { extensionVersion: '0.2.0', restricted: false, realpath: (p: string) => p, log: (): void => undefined };

describe('chooseInterpreter', () => {
  const candidates: Candidate[] = [
    { source: 'python-extension', python: '/proj/.venv/bin/python' },
    { source: 'setting', python: 'python3' },
    { source: 'managed', python: '/storage/python-env/bin/python' },
  ];

  it('the Python extension\'s interpreter first when it has lsp-agent of our version', async () => {
    const p = probes({ '/proj/.venv/bin/python': { ok: true, version: '0.2.0' }, python3: { ok: true, version: '0.2.0' } });
    const choice = await chooseInterpreter({ ...base, candidates, probe: p.probe });
    assert.equal(choice.kind === 'use' && choice.candidate.source, 'python-extension');
    assert.deepEqual(p.ran, ['/proj/.venv/bin/python']);
  });

  it('a missing or mismatched lsp-agent falls through to the next; the managed environment last', async () => {
    const p = probes({ python3: { ok: true, version: '0.1.0' }, '/storage/python-env/bin/python': { ok: true, version: '0.2.0' } });
    const choice = await chooseInterpreter({ ...base, candidates, probe: p.probe });
    assert.equal(choice.kind === 'use' && choice.candidate.source, 'managed');
    assert.deepEqual(p.ran, ['/proj/.venv/bin/python', 'python3', '/storage/python-env/bin/python']);
  });

  it('none usable: the first problem, and a mismatched one to run with if the user declines', async () => {
    const p = probes({ python3: { ok: true, version: '0.1.0' } });
    const choice = await chooseInterpreter({ ...base, candidates: candidates.slice(0, 2), probe: p.probe });
    assert.ok(choice.kind === 'none');
    assert.match(choice.problem, /lsp-agent is not installed/);
    assert.deepEqual(choice.fallback, { candidate: candidates[1], version: '0.1.0' });
  });

  it('Restricted Mode: the Python extension\'s interpreter inside the workspace never runs (a canary)', async () => {
    const ws = path.join(scratch, 'ws');
    mkdirSync(path.join(ws, '.venv', 'bin'), { recursive: true });
    const canary = path.join(scratch, 'canary');
    const evil = path.join(ws, '.venv', 'bin', 'python');
    writeFileSync(evil, `#!/bin/sh\necho ran > '${canary}'\necho 0.2.0\n`);
    chmodSync(evil, 0o755);
    const logged: string[] = [];
    const options = { ...base, realpath: realpathSync, log: (m: string) => logged.push(m), workspace: ws, probe: (python: string) => probeInterpreter(python) };
    const restricted = await chooseInterpreter({ ...options, restricted: true, candidates: [{ source: 'python-extension', python: evil }] });
    assert.equal(existsSync(canary), false, 'the repository\'s interpreter ran');
    assert.ok(restricted.kind === 'none' && /Restricted Mode and the Python extension's interpreter .* lies inside the workspace/.test(restricted.problem));
    // the control: trusted, the same interpreter is run
    await chooseInterpreter({ ...options, restricted: false, candidates: [{ source: 'python-extension', python: evil }] });
    assert.equal(readFileSync(canary, 'utf8'), 'ran\n');
  });

  it('versions: equal (a leading v aside) match; a checkout without metadata is taken', () => {
    assert.ok(versionsMatch('0.2.0', '0.2.0') && versionsMatch('v0.2.0', '0.2.0') && versionsMatch('source tree', '0.2.0'));
    assert.ok(!versionsMatch('0.1.0', '0.2.0'));
    assert.equal(mismatchProblem('/p/python', '0.1.0', '0.2.0'), 'the extension is 0.2.0, the server at /p/python is 0.1.0: update it or let the extension manage its environment');
  });

  it('recognises the server\'s mismatch warning (lsp_agent/server/client_version.py)', () => {
    assert.ok(isVersionMismatchMessage('lsp-agent: the extension is 0.2.0, the server at /usr/bin/python3 is 0.1.0: update it (/usr/bin/python3 -m pip install --upgrade ./lsp_agent-0.2.0-py3-none-any.whl, the release\'s wheel) or let the extension manage its environment'));
    assert.ok(!isVersionMismatchMessage('lsp-agent: no model is configured'));
  });
});

describe('the offer', () => {
  it('gives the reason without the by-hand fix', () => {
    assert.equal(
      offerMessage('lsp-agent is not installed for "python3". Fix: run "LSP Agent: Set Up a Managed Python Environment", install the lsp-agent wheel into it ("python3 -m pip install ./lsp_agent-<version>-py3-none-any.whl"), or set "lspAgent.python".', '0.1.0'),
      'LSP Agent: lsp-agent is not installed for "python3". Create a Python environment for lsp-agent 0.1.0 in the extension\'s storage? (It uses a Python 3.11+ from PATH and downloads the dependencies from your package index.)',
    );
  });
});

describe('offerDecision (asked once)', () => {
  it('asks the first time; a "Not Now" is kept; the command or an earlier choice builds', () => {
    assert.equal(offerDecision(undefined, false, false), 'ask');
    assert.equal(offerDecision('declined', false, false), 'skip');
    assert.equal(offerDecision('declined', false, true), 'build');
    assert.equal(offerDecision(undefined, true, false), 'build', 'an upgrade rebuilds without asking');
  });
});

describe('the probe runs in the workspace folder without importing from it', () => {
  it('a repository\'s own lsp_agent/ does not run (a canary); the installed lsp-agent is found', async () => {
    const ws = path.join(scratch, 'shadow');
    mkdirSync(path.join(ws, 'lsp_agent', 'server'), { recursive: true });
    const canary = path.join(scratch, 'shadow-canary');
    writeFileSync(path.join(ws, 'lsp_agent', '__init__.py'), `open(${JSON.stringify(canary)}, "w").write("ran")\n`);
    writeFileSync(path.join(ws, 'lsp_agent', 'server', '__init__.py'), '');
    writeFileSync(path.join(ws, 'lsp_agent', 'server', 'app.py'), '');
    const env = { ...process.env };
    delete env.PYTHONPATH; // the installed lsp-agent, as a user has it
    const result = await probeInterpreter(PYTHON, { cwd: ws, env });
    assert.equal(existsSync(canary), false, 'the workspace\'s lsp_agent was imported');
    assert.ok(result.ok, JSON.stringify(result));
    // the server itself, as the extension starts it there (stdin at its end: it stops at once)
    const spec = serverLaunch(PYTHON, env, ws);
    const served = spawnSync(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, input: '', timeout: 60_000, encoding: 'utf8' });
    assert.equal(served.error, undefined);
    assert.equal(existsSync(canary), false, 'the workspace\'s lsp_agent ran as the server');
  });
});
