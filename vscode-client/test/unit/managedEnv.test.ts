// The managed environment: built whole or not at all, rebuilt for a new carried wheel, pip's
// failures classified (offline against a dead loopback index with the real pip), cancellable; and
// the base Python found by running it, not by its name.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';

import { waitFor } from '../helpers/bundledExtension.js';
import {
  ENV_DIR,
  MARKER,
  OFFLINE_MESSAGE,
  buildManagedEnv,
  carriedWheel,
  classifyPipFailure,
  envDir,
  pipStage,
  usableManagedPython,
} from '../../src/managedEnv.js';
import type { BuildOptions } from '../../src/managedEnv.js';
import { findPython, pickPython } from '../../src/pythonFinder.js';

const ROOT = path.join(__dirname, '..', '..', '..');
const scratch = mkdtempSync(path.join(tmpdir(), 'lsp-agent-managed-env-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let counter = 0;

function fresh(name: string): string {
  counter += 1;
  const dir = path.join(scratch, `${name}-${counter}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function script(file: string, body: string): string {
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/**
 * A stand-in base Python: `-m venv DIR` makes DIR/bin/python, whose `-m pip install` does what
 * FAKE_PIP says: `ok` (pip's success lines), `offline` (pip's lines when the index is unreachable),
 * `hang` (says it started, then waits to be killed).
 */
function fakeBasePython(dir: string): string {
  const venvPython = script(
    path.join(dir, 'venv-python'),
    [
      'echo "$@" >> "$(dirname "$0")/../calls"',
      'case "$FAKE_PIP" in',
      '  ok) echo "Processing /x/lsp_agent-0.1.0-py3-none-any.whl"; echo "Collecting pygls>=2"; echo "  Using cached pygls-2.0.0-py3-none-any.whl (1 kB)";',
      '      echo "Installing collected packages: pygls, lsp-agent"; echo "Successfully installed lsp-agent-0.1.0 pygls-2.0.0"; exit 0;;',
      '  offline) echo "WARNING: Retrying (Retry(total=0)) after connection broken by \'NewConnectionError(\'<pip._vendor.urllib3.connection.HTTPConnection>: Failed to establish a new connection: [Errno 111] Connection refused\')\': /simple/pygls/" >&2;',
      '      echo "ERROR: Could not find a version that satisfies the requirement pygls>=2 (from lsp-agent) (from versions: none)" >&2;',
      '      echo "ERROR: No matching distribution found for pygls>=2" >&2; exit 1;;',
      '  hang) touch "$FAKE_STARTED"; exec sleep 600;;',
      'esac',
      'exit 3',
    ].join('\n'),
  );
  return script(
    path.join(dir, 'python3'),
    `[ "$1 $2" = "-m venv" ] || exit 2\nmkdir -p "$3/bin" && cp '${venvPython}' "$3/bin/python"`,
  );
}

function options(storage: string, base: string, extra: Partial<BuildOptions> = {}): BuildOptions & { stages: string[]; lines: string[] } {
  const stages: string[] = [];
  const lines: string[] = [];
  return {
    storage,
    wheel: '/x/server/lsp_agent-0.1.0-py3-none-any.whl',
    version: '0.1.0',
    basePython: base,
    env: { ...process.env, FAKE_PIP: 'ok' },
    onStage: (s) => stages.push(s),
    onLog: (l) => lines.push(l),
    stages,
    lines,
    ...extra,
  };
}

describe('buildManagedEnv (a stand-in Python)', () => {
  it('builds, writes the marker, and shows pip\'s stages', async () => {
    const storage = fresh('storage');
    const base = fakeBasePython(fresh('bin'));
    const o = options(storage, base);
    const result = await buildManagedEnv(o);
    assert.deepEqual(result, { ok: true, python: path.join(storage, ENV_DIR, 'bin', 'python') });
    assert.deepEqual(JSON.parse(readFileSync(path.join(storage, ENV_DIR, MARKER), 'utf8')), { wheel: 'lsp_agent-0.1.0-py3-none-any.whl', version: '0.1.0' });
    assert.equal(usableManagedPython(storage, o.wheel), path.join(storage, ENV_DIR, 'bin', 'python'));
    assert.ok(o.stages.includes('installing lsp_agent-0.1.0-py3-none-any.whl'));
    assert.ok(o.stages.includes('collecting pygls'));
    assert.ok(o.stages.includes('using cached pygls-2.0.0-py3-none-any.whl'));
    assert.ok(o.lines.some((l) => l.startsWith('Successfully installed')), 'pip\'s output reaches the log');
    assert.deepEqual(readdirSync(storage), [ENV_DIR], 'no scratch directory is left');
    // the install is of the carried wheel, with the progress bar off
    assert.match(readFileSync(path.join(storage, ENV_DIR, 'calls'), 'utf8'), /-m pip install --progress-bar off \/x\/server\/lsp_agent-0\.1\.0-py3-none-any\.whl/);
  });

  it('offline: the classified message, and nothing half-built is left or used', async () => {
    const storage = fresh('storage');
    const o = options(storage, fakeBasePython(fresh('bin')), { env: { ...process.env, FAKE_PIP: 'offline' } });
    const result = await buildManagedEnv(o);
    assert.deepEqual(result, { ok: false, kind: 'offline', message: OFFLINE_MESSAGE });
    assert.deepEqual(readdirSync(storage), []);
    assert.equal(usableManagedPython(storage, o.wheel), undefined);
  });

  it('cancel kills pip and keeps nothing; the environment of before stays as it was', async () => {
    const storage = fresh('storage');
    const base = fakeBasePython(fresh('bin'));
    const first = await buildManagedEnv(options(storage, base, { wheel: '/x/lsp_agent-0.0.9-py3-none-any.whl', version: '0.0.9' }));
    assert.ok(first.ok);
    const started = path.join(fresh('flag'), 'started');
    const abort = new AbortController();
    const building = buildManagedEnv(options(storage, base, { env: { ...process.env, FAKE_PIP: 'hang', FAKE_STARTED: started }, signal: abort.signal }));
    await waitFor(() => existsSync(started), 'pip to start', 60_000);
    abort.abort();
    const result = await building;
    assert.equal(result.ok ? 'ok' : result.kind, 'cancelled');
    assert.deepEqual(readdirSync(storage), [ENV_DIR]);
    assert.equal((JSON.parse(readFileSync(path.join(storage, ENV_DIR, MARKER), 'utf8')) as { version: string }).version, '0.0.9');
  });

  it('a new carried wheel (an upgrade) makes the environment stale; the rebuild replaces it', async () => {
    const storage = fresh('storage');
    const base = fakeBasePython(fresh('bin'));
    const old = options(storage, base, { wheel: '/x/lsp_agent-0.0.9-py3-none-any.whl', version: '0.0.9' });
    assert.ok((await buildManagedEnv(old)).ok);
    const now = options(storage, base);
    assert.equal(usableManagedPython(storage, now.wheel), undefined, 'an environment of the old wheel is not used');
    assert.ok((await buildManagedEnv(now)).ok);
    assert.ok(usableManagedPython(storage, now.wheel));
    assert.deepEqual(readdirSync(storage), [ENV_DIR]);
  });

  it('a second build of the same wheel (another window) leaves the finished environment in place', async () => {
    const storage = fresh('storage');
    const base = fakeBasePython(fresh('bin'));
    assert.ok((await buildManagedEnv(options(storage, base))).ok);
    const inUse = path.join(storage, ENV_DIR, 'in-use');
    writeFileSync(inUse, 'a server runs from here');
    assert.ok((await buildManagedEnv(options(storage, base))).ok);
    assert.equal(readFileSync(inUse, 'utf8'), 'a server runs from here');
    assert.deepEqual(readdirSync(storage), [ENV_DIR]);
  });

  it('a crash mid-build is never used: no marker, or a marker only in the scratch directory', async () => {
    const storage = fresh('storage');
    const wheel = '/x/lsp_agent-0.1.0-py3-none-any.whl';
    // killed after pip, before the rename: the scratch directory even holds a marker
    const left = path.join(storage, `${ENV_DIR}.building-abc`);
    mkdirSync(path.join(left, 'bin'), { recursive: true });
    writeFileSync(path.join(left, 'bin', 'python'), '');
    writeFileSync(path.join(left, MARKER), JSON.stringify({ wheel: path.basename(wheel), version: '0.1.0' }));
    assert.equal(usableManagedPython(storage, wheel), undefined);
    // an environment directory without its marker (made by hand, or an older layout)
    mkdirSync(path.join(envDir(storage), 'bin'), { recursive: true });
    writeFileSync(path.join(envDir(storage), 'bin', 'python'), '');
    assert.equal(usableManagedPython(storage, wheel), undefined);
    // the next build clears the leftover and replaces the unmarked directory
    assert.ok((await buildManagedEnv(options(storage, fakeBasePython(fresh('bin')), { wheel }))).ok);
    assert.deepEqual(readdirSync(storage), [ENV_DIR]);
    assert.ok(usableManagedPython(storage, wheel));
  });
});

describe('pip output', () => {
  it('classifies: unreachable index, a missing distribution, anything else', () => {
    assert.equal(classifyPipFailure('WARNING: Retrying ... Failed to establish a new connection: [Errno 111] Connection refused', 1).kind, 'offline');
    assert.deepEqual(classifyPipFailure('ERROR: No matching distribution found for pygls>=2', 1), {
      ok: false,
      kind: 'unavailable',
      message: 'the package index has no pygls>=2 for this Python — see the log',
    });
    assert.match(classifyPipFailure('ERROR: disk full\n', 1).message, /^pip could not install lsp-agent \(exit code 1\): ERROR: disk full — see the log$/);
  });

  it('names the stages', () => {
    assert.equal(pipStage('  Downloading https://files/pygls-2.0.0-py3-none-any.whl (100 kB)'), 'downloading pygls-2.0.0-py3-none-any.whl');
    assert.equal(pipStage('Installing collected packages: a, b'), 'installing the packages');
    assert.equal(pipStage('random'), undefined);
  });
});

describe('carriedWheel', () => {
  it('finds the wheel in server/, the newest when there are several', () => {
    const ext = fresh('ext');
    assert.equal(carriedWheel(ext), undefined);
    mkdirSync(path.join(ext, 'server'));
    for (const name of ['lsp_agent-0.9.0-py3-none-any.whl', 'lsp_agent-0.10.0-py3-none-any.whl', 'other-1.0-py3-none-any.whl']) {
      writeFileSync(path.join(ext, 'server', name), '');
    }
    assert.deepEqual(carriedWheel(ext), { file: path.join(ext, 'server', 'lsp_agent-0.10.0-py3-none-any.whl'), version: '0.10.0' });
  });
});

describe('findPython', () => {
  it('runs each name: a python3 that is 3.9 is too old, said with its version and path', async () => {
    const bin = fresh('bin');
    script(path.join(bin, 'python3'), 'echo 3.9.18; echo /opt/py39/bin/python3');
    const result = await findPython({ PATH: bin }, bin);
    assert.deepEqual(result, {
      ok: false,
      tooOld: { command: 'python3', executable: '/opt/py39/bin/python3', version: '3.9.18' },
      problem: 'lsp-agent needs Python 3.11 or newer; found 3.9.18 at /opt/py39/bin/python3',
    });
  });

  it('takes the newest name that is new enough; nothing on PATH is said too', async () => {
    const bin = fresh('bin');
    script(path.join(bin, 'python3'), 'echo 3.9.18; echo /opt/py39/bin/python3');
    script(path.join(bin, 'python3.12'), 'echo 3.12.1; echo /opt/py312/bin/python3.12');
    const result = await findPython({ PATH: bin }, bin);
    assert.ok(result.ok && result.python.executable === '/opt/py312/bin/python3.12');
    const none = await findPython({ PATH: fresh('empty') }, scratch);
    assert.ok(!none.ok && /none was found on PATH/.test(none.problem));
    assert.deepEqual(pickPython([]), none);
  });
});

/** A loopback port with nobody listening. */
async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('buildManagedEnv (the real Python and pip)', () => {
  const wheel = carriedWheel(ROOT);
  const base = process.env.LSP_AGENT_BASE_PYTHON ?? 'python3';
  it('offline (the index on a dead loopback port): the classified message, nothing left', { skip: wheel ? false : 'no carried wheel: run scripts/carry-wheel.sh' }, async () => {
    const storage = fresh('storage');
    const port = await deadPort();
    const baseExecutable = execFileSync(base, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
    const o = options(storage, baseExecutable, {
      wheel: wheel!.file,
      version: wheel!.version,
      env: { ...process.env, PIP_INDEX_URL: `http://127.0.0.1:${port}/simple`, PIP_EXTRA_INDEX_URL: '', PIP_FIND_LINKS: '', PIP_RETRIES: '1', PIP_TIMEOUT: '5' },
    });
    const result = await buildManagedEnv(o);
    assert.deepEqual(result, { ok: false, kind: 'offline', message: OFFLINE_MESSAGE }, o.lines.join('\n'));
    assert.deepEqual(readdirSync(storage), []);
    assert.ok(o.stages.includes('installing lsp_agent-0.1.0-py3-none-any.whl') || o.stages.some((s) => s.startsWith('installing')));
  });
});
