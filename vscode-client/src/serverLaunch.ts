// Starting the server: `<python> -m lsp_agent serve` (under debugpy when asked), and a probe
// that runs first so a missing interpreter or a missing lsp-agent becomes a clear message with
// the fix, instead of a dead language client. No `vscode` here.

import { execFile } from 'node:child_process';

export interface LaunchSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

/** Set in the extension host's environment (see .vscode/launch.json) to debug the server. */
export const DEBUGPY_PORT_ENV = 'LSP_AGENT_DEBUGPY_PORT';

export const SERVE_ARGS = ['-m', 'lsp_agent', 'serve'] as const;

/**
 * The server and the probe run in the workspace folder, and `python -m`/`-c` would put that folder
 * first on the import path: a repository holding its own `lsp_agent/` (or `importlib/`, `json/`…)
 * would run its code as the server. Python 3.11+ (the versions we run on) keeps the current
 * directory off the path with `-P`; PYTHONPATH and installed packages still count. The server gets
 * the flag, not the PYTHONSAFEPATH variable, which its children (the user's own `python -m pytest`,
 * a script that imports its neighbours) would inherit. The probe, which starts nothing and may meet
 * an older Python that does not know `-P`, gets the variable.
 */
export const SAFE_PATH_FLAG = '-P';
export const SAFE_PATH = { PYTHONSAFEPATH: '1' } as const;

function cleanEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined) {
      out[key] = value;
    }
  }
  return out;
}

export function serverLaunch(python: string, env: NodeJS.ProcessEnv, cwd?: string): LaunchSpec {
  const port = env[DEBUGPY_PORT_ENV]?.trim();
  const debug = port && /^\d{1,5}$/.test(port) ? ['-m', 'debugpy', '--listen', `127.0.0.1:${port}`] : [];
  const spec: LaunchSpec = {
    command: python,
    args: [SAFE_PATH_FLAG, ...debug, ...SERVE_ARGS],
    // Unbuffered, so the server's log lines reach the output channel as they happen.
    env: { ...cleanEnv(env), PYTHONUNBUFFERED: '1' },
  };
  if (cwd) {
    spec.cwd = cwd;
  }
  return spec;
}

export const PROBE_SCRIPT = [
  'import sys',
  'if sys.version_info < (3, 11): sys.exit("lsp-agent needs Python 3.11 or newer, this is " + sys.version.split()[0])',
  'import lsp_agent.server.app',
  'try: from lsp_agent import __version__ as v',
  'except ImportError: v = None',
  'if v is None:',
  '  from importlib.metadata import version, PackageNotFoundError',
  '  try: v = version("lsp-agent")',
  '  except PackageNotFoundError: v = "source tree"',
  'print(v)',
].join('\n');

export interface ProbeOutcome {
  /** the spawn error code (ENOENT, EACCES, ETIMEDOUT…) when the interpreter did not run */
  spawnError?: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export type ProbeResult = { ok: true; version: string } | { ok: false; problem: string };

function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return lines[lines.length - 1] ?? '';
}

/** Turn the probe's outcome into "ok" or a message that says what to do. */
export function explainProbe(python: string, outcome: ProbeOutcome): ProbeResult {
  const setIt = 'set "lspAgent.python" to a Python 3.11+ interpreter that has lsp-agent installed (e.g. your checkout\'s .venv/bin/python)';
  if (outcome.spawnError === 'ENOENT') {
    return { ok: false, problem: `The Python interpreter "${python}" was not found. Fix: ${setIt}.` };
  }
  if (outcome.spawnError === 'EACCES') {
    return { ok: false, problem: `"${python}" cannot be executed (permission denied). Fix: ${setIt}.` };
  }
  if (outcome.spawnError === 'ETIMEDOUT') {
    return { ok: false, problem: `"${python}" did not answer in time while importing lsp-agent. Fix: ${setIt}.` };
  }
  if (outcome.spawnError) {
    return { ok: false, problem: `Could not run "${python}" (${outcome.spawnError}). Fix: ${setIt}.` };
  }
  if (outcome.exitCode === 0) {
    return { ok: true, version: lastLine(outcome.stdout) || 'unknown' };
  }
  const error = lastLine(outcome.stderr);
  const missing = /No module named '([^']+)'/.exec(error)?.[1];
  if (missing === 'lsp_agent' || missing?.startsWith('lsp_agent.')) {
    return {
      ok: false,
      problem:
        `lsp-agent is not installed for "${python}". Fix: run "LSP Agent: Set Up a Managed Python Environment", ` +
        `install the lsp-agent wheel into it ("${python} -m pip install ./lsp_agent-<version>-py3-none-any.whl"), or ${setIt}.`,
    };
  }
  if (missing) {
    return {
      ok: false,
      problem: `lsp-agent's dependencies are incomplete for "${python}" (no module named '${missing}'). Fix: reinstall the lsp-agent wheel into it ("${python} -m pip install --force-reinstall ./lsp_agent-<version>-py3-none-any.whl"), or run "LSP Agent: Set Up a Managed Python Environment".`,
    };
  }
  if (/needs Python 3\.11/.test(error) || /SyntaxError/.test(error)) {
    return { ok: false, problem: `"${python}" is too old for lsp-agent (${error}). Fix: ${setIt}.` };
  }
  return { ok: false, problem: `"${python}" could not import lsp-agent: ${error || `exit code ${String(outcome.exitCode)}`}. Fix: ${setIt}.` };
}

/** Run the probe with the real interpreter. */
export function probeInterpreter(python: string, options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(
      python,
      ['-c', PROBE_SCRIPT],
      { cwd: options.cwd, env: { ...(options.env ?? process.env), ...SAFE_PATH }, timeout: options.timeoutMs ?? 20_000, windowsHide: true },
      (error, stdout, stderr) => {
        const outcome: ProbeOutcome = { exitCode: 0, stdout, stderr };
        if (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (typeof code === 'string') {
            outcome.spawnError = code;
          } else if ((error as { killed?: boolean }).killed) {
            outcome.spawnError = 'ETIMEDOUT';
          }
          outcome.exitCode = typeof code === 'number' ? code : null;
        }
        resolve(explainProbe(python, outcome));
      },
    );
  });
}
