// Finding a Python that can host a managed environment: the names a Python usually goes by on
// PATH, each run once to learn its real version (a `python3` may be 3.9; the name says nothing).
// No `vscode` here.

import { execFile } from 'node:child_process';

/** Newest first, so a machine with several gets the newest one it has. */
export const PYTHON_NAMES = ['python3.13', 'python3.12', 'python3.11', 'python3', 'python'] as const;

export const MIN_PYTHON: readonly [number, number] = [3, 11];

const VERSION_SCRIPT = 'import sys; print("%d.%d.%d" % sys.version_info[:3]); print(sys.executable)';

export interface FoundPython {
  /** the command as found on PATH */
  command: string;
  /** its own sys.executable (an absolute path) */
  executable: string;
  version: string;
}

export type FindResult = { ok: true; python: FoundPython } | { ok: false; problem: string; tooOld?: FoundPython };

/** What a run of VERSION_SCRIPT printed, or undefined when it is not that. */
export function parseVersionOutput(command: string, stdout: string): FoundPython | undefined {
  const [version, executable] = stdout.split('\n').map((l) => l.trim());
  if (!version || !/^\d+\.\d+\.\d+$/.test(version) || !executable) {
    return undefined;
  }
  return { command, executable, version };
}

export function newEnough(version: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  return major !== undefined && minor !== undefined && (major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]));
}

/** The choice among what ran: the first new enough, else a message naming the best one found. */
export function pickPython(found: FoundPython[]): FindResult {
  const usable = found.find((p) => newEnough(p.version));
  if (usable) {
    return { ok: true, python: usable };
  }
  const old = found[0];
  if (old) {
    return { ok: false, tooOld: old, problem: `lsp-agent needs Python 3.11 or newer; found ${old.version} at ${old.executable}` };
  }
  return { ok: false, problem: `lsp-agent needs Python 3.11 or newer; none was found on PATH (looked for ${PYTHON_NAMES.join(', ')})` };
}

function runVersion(command: string, env: NodeJS.ProcessEnv, cwd: string): Promise<FoundPython | undefined> {
  return new Promise((resolve) => {
    execFile(command, ['-c', VERSION_SCRIPT], { env, cwd, timeout: 15_000, windowsHide: true }, (error, stdout) => {
      resolve(error ? undefined : parseVersionOutput(command, stdout));
    });
  });
}

/**
 * Run each name on PATH and pick. `cwd` is a directory the user's workspace does not control, so
 * nothing the repository holds is on the interpreter's path while it runs.
 */
export async function findPython(env: NodeJS.ProcessEnv, cwd: string, names: readonly string[] = PYTHON_NAMES): Promise<FindResult> {
  const found: FoundPython[] = [];
  for (const name of names) {
    const python = await runVersion(name, env, cwd);
    if (python) {
      found.push(python);
      if (newEnough(python.version)) {
        break;
      }
    }
  }
  return pickPython(found);
}
