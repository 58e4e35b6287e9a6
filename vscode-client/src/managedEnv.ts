// The extension's own Python environment: a venv in the extension's storage with the wheel the
// .vsix carries installed in it (its dependencies come from the user's configured index). It is
// built in a scratch directory next to its final place and renamed into place only once pip
// succeeded and the marker is written, so a build that crashed or was cancelled is never used:
// the final directory either does not exist or is complete. A different carried wheel (the
// extension was upgraded) makes the marker stale and the environment is built again.
// No `vscode` here.

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const ENV_DIR = 'python-env';
export const MARKER = 'lsp-agent-managed.json';
const BUILDING = `${ENV_DIR}.building-`;
const RETIRED = `${ENV_DIR}.old-`;
const MARKER_MAX_BYTES = 4096;

export interface Marker {
  /** the carried wheel's file name the environment was built from */
  wheel: string;
  version: string;
}

export function envDir(storage: string): string {
  return path.join(storage, ENV_DIR);
}

export function envPython(dir: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? path.join(dir, 'Scripts', 'python.exe') : path.join(dir, 'bin', 'python');
}

/** The wheel the extension carries (`server/lsp_agent-<version>-py3-none-any.whl`), if any. */
export function carriedWheel(extensionPath: string): { file: string; version: string } | undefined {
  const dir = path.join(extensionPath, 'server');
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  const wheels: { name: string; version: string }[] = [];
  for (const name of names) {
    const version = /^lsp_agent-([^-]+)-py3-none-any\.whl$/.exec(name)?.[1];
    if (version) {
      wheels.push({ name, version });
    }
  }
  const newest = wheels.sort((a, b) => a.version.localeCompare(b.version, undefined, { numeric: true })).pop();
  return newest ? { file: path.join(dir, newest.name), version: newest.version } : undefined;
}

export function readMarker(dir: string): Marker | undefined {
  try {
    const file = path.join(dir, MARKER);
    const stat = fs.lstatSync(file);
    if (!stat.isFile() || stat.size > MARKER_MAX_BYTES) {
      return undefined;
    }
    const value = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Marker>;
    return typeof value.wheel === 'string' && typeof value.version === 'string' ? { wheel: value.wheel, version: value.version } : undefined;
  } catch {
    return undefined;
  }
}

/** The managed interpreter when the environment is complete and built from `wheel`; else undefined. */
export function usableManagedPython(storage: string, wheel: string, platform: NodeJS.Platform = process.platform): string | undefined {
  const dir = envDir(storage);
  const marker = readMarker(dir);
  const python = envPython(dir, platform);
  return marker?.wheel === path.basename(wheel) && fs.existsSync(python) ? python : undefined;
}

/** The user chose a managed environment at some point (one exists, maybe from an older wheel). */
export function managedEnvChosen(storage: string): boolean {
  return fs.existsSync(envDir(storage));
}

// --- pip's output ----------------------------------------------------------------------------------

/** The stage a line of pip's output announces, in the words the progress notification shows. */
export function pipStage(line: string): string | undefined {
  const text = line.trim();
  let m: RegExpExecArray | null;
  if ((m = /^Processing \S*?(lsp_agent-[^\s/]+\.whl)/.exec(text))) {
    return `installing ${m[1]}`;
  }
  if ((m = /^Collecting ([A-Za-z0-9_.-]+)/.exec(text))) {
    return `collecting ${m[1]}`;
  }
  if ((m = /^Downloading (\S+)/.exec(text))) {
    return `downloading ${path.basename(m[1] ?? '')}`;
  }
  if ((m = /^Using cached (\S+)/.exec(text))) {
    return `using cached ${path.basename(m[1] ?? '')}`;
  }
  if (/^Installing collected packages/.test(text)) {
    return 'installing the packages';
  }
  if (/^WARNING: Retrying/.test(text)) {
    return 'the package index does not answer: retrying';
  }
  if (/^Successfully installed/.test(text)) {
    return 'installed';
  }
  return undefined;
}

export type FailureKind = 'offline' | 'unavailable' | 'pip' | 'venv' | 'cancelled' | 'io';

export interface BuildFailure {
  ok: false;
  kind: FailureKind;
  message: string;
}

export const OFFLINE_MESSAGE = 'could not download the dependencies: no network or index unreachable — see the log';

const CONNECTION_TROUBLE =
  /NewConnectionError|Failed to establish a new connection|Connection refused|Network is unreachable|Temporary failure in name resolution|Name or service not known|nodename nor servname|ConnectTimeoutError|Read timed out|ProxyError|Max retries exceeded|SSLError|Could not fetch URL/;

/** Why pip failed, from everything it printed. */
export function classifyPipFailure(output: string, exitCode: number | null): BuildFailure {
  if (CONNECTION_TROUBLE.test(output)) {
    return { ok: false, kind: 'offline', message: OFFLINE_MESSAGE };
  }
  const missing = /No matching distribution found for (\S+)/.exec(output)?.[1];
  if (missing) {
    return { ok: false, kind: 'unavailable', message: `the package index has no ${missing} for this Python — see the log` };
  }
  const last = output.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('ERROR:')).pop();
  return { ok: false, kind: 'pip', message: `pip could not install lsp-agent (exit code ${String(exitCode)})${last ? `: ${last}` : ''} — see the log` };
}

// --- running the steps -----------------------------------------------------------------------------

interface RunOutcome {
  code: number | null;
  output: string;
  spawnError?: string;
  aborted: boolean;
}

/** Run one step, every output line to `onLine`; the signal kills it. */
function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; onLine(line: string): void; signal?: AbortSignal | undefined }): Promise<RunOutcome> {
  return new Promise((resolve) => {
    let output = '';
    let pending = '';
    const take = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      output += text;
      pending += text;
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? '';
      for (const line of lines) {
        options.onLine(line);
      }
    };
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true, signal: options.signal });
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let spawnError: string | undefined;
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError = error.name === 'AbortError' ? undefined : (error.code ?? error.message);
    });
    child.on('close', (code) => {
      if (pending) {
        options.onLine(pending);
      }
      resolve({ code, output, aborted: options.signal?.aborted ?? false, ...(spawnError ? { spawnError } : {}) });
    });
  });
}

/** The environment the steps run with: the user's (their pip index, proxy, certificates), minus what would point Python elsewhere. */
export function stepEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const dropped = new Set(['PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP', 'PYTHONUSERBASE', 'PIP_USER', 'PIP_TARGET', 'PIP_PREFIX', 'VIRTUAL_ENV']);
  const kept = Object.entries(env).filter(([key]) => !dropped.has(key));
  return { ...Object.fromEntries(kept), PYTHONSAFEPATH: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_NO_INPUT: '1' };
}

function removeQuietly(dir: string): void {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    // a leftover is removed by the next build
  }
}

/** Scratch and retired directories of earlier builds that did not finish (a crash, a kill). */
export function removeLeftovers(storage: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(storage);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(BUILDING) || name.startsWith(RETIRED)) {
      removeQuietly(path.join(storage, name));
    }
  }
}

export interface BuildOptions {
  storage: string;
  /** the carried wheel (a path) */
  wheel: string;
  version: string;
  /** a Python >= 3.11 to make the venv with (pythonFinder) */
  basePython: string;
  env: NodeJS.ProcessEnv;
  onStage(stage: string): void;
  onLog(line: string): void;
  signal?: AbortSignal;
  platform?: NodeJS.Platform;
}

export type BuildResult = { ok: true; python: string } | BuildFailure;

const CANCELLED: BuildFailure = { ok: false, kind: 'cancelled', message: 'the environment was not created: cancelled (nothing was kept)' };

export async function buildManagedEnv(options: BuildOptions): Promise<BuildResult> {
  const platform = options.platform ?? process.platform;
  let scratch: string;
  try {
    fs.mkdirSync(options.storage, { recursive: true });
    removeLeftovers(options.storage);
    scratch = fs.mkdtempSync(path.join(options.storage, BUILDING));
  } catch (error) {
    return { ok: false, kind: 'io', message: `could not prepare ${options.storage}: ${String(error)}` };
  }
  const env = stepEnv(options.env);
  const step = { cwd: options.storage, env, onLine: (line: string): void => options.onLog(line), signal: options.signal };
  try {
    options.onStage(`creating a virtual environment with ${options.basePython}`);
    const venv = await run(options.basePython, ['-m', 'venv', scratch], step);
    if (venv.aborted) {
      return CANCELLED;
    }
    if (venv.code !== 0) {
      const why = venv.spawnError ?? (venv.output.trim().split('\n').pop() || `exit code ${String(venv.code)}`);
      return { ok: false, kind: 'venv', message: `could not create a virtual environment with ${options.basePython}: ${why} — see the log` };
    }
    options.onStage('installing lsp-agent and its dependencies');
    const python = envPython(scratch, platform);
    const pip = await run(python, ['-m', 'pip', 'install', '--progress-bar', 'off', options.wheel], {
      ...step,
      onLine: (line) => {
        options.onLog(line);
        const stage = pipStage(line);
        if (stage) {
          options.onStage(stage);
        }
      },
    });
    if (pip.aborted) {
      return CANCELLED;
    }
    if (pip.code !== 0) {
      return classifyPipFailure(pip.output, pip.code);
    }
    // Written last: its presence says every step before it succeeded.
    const marker: Marker = { wheel: path.basename(options.wheel), version: options.version };
    fs.writeFileSync(path.join(scratch, MARKER), JSON.stringify(marker));
    if (options.signal?.aborted) {
      return CANCELLED;
    }
    const final = envDir(options.storage);
    if (readMarker(final)?.wheel === marker.wheel && fs.existsSync(envPython(final, platform))) {
      // another window finished the same build first and may already run its server from it:
      // keep that one, never move it from under its process
      options.onStage('ready');
      return { ok: true, python: envPython(final, platform) };
    }
    const retired = `${path.join(options.storage, RETIRED)}${path.basename(scratch).slice(BUILDING.length)}`;
    if (fs.existsSync(final)) {
      fs.renameSync(final, retired);
    }
    fs.renameSync(scratch, final);
    removeQuietly(retired);
    options.onStage('ready');
    return { ok: true, python: envPython(final, platform) };
  } catch (error) {
    return { ok: false, kind: 'io', message: `could not build the environment: ${String(error)}` };
  } finally {
    removeQuietly(scratch); // gone already after the rename; otherwise a half-built environment
  }
}
