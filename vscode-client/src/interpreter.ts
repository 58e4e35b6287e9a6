// Which Python runs the server. Candidates in order: the Python extension's active interpreter
// (when ms-python.python is installed), then lspAgent.python (or python3 on PATH), then the
// extension's own managed environment; the first that has lsp-agent of the extension's version
// wins. When none does, the caller offers to build the managed environment instead of stopping
// at an error. No `vscode` here: the Python extension's API comes in as a plain object.

import * as path from 'node:path';

import type { ProbeResult } from './serverLaunch.js';
import { insideWorkspace } from './settings.js';

/** The part of ms-python.python's exported API used here (its `environments` API). */
export interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: unknown): { id?: string; path?: string } | undefined;
    resolveEnvironment(environment: unknown): Promise<{ executable?: { uri?: { fsPath?: string } } } | undefined>;
  };
}

/** The Python extension's active interpreter for the workspace, or undefined (absent, no API, any failure). */
export async function pythonExtensionInterpreter(api: PythonExtensionApi | undefined, resource?: unknown): Promise<string | undefined> {
  const environments = api?.environments;
  if (!environments || typeof environments.getActiveEnvironmentPath !== 'function') {
    return undefined;
  }
  try {
    const active = environments.getActiveEnvironmentPath(resource);
    if (!active) {
      return undefined;
    }
    const resolved = typeof environments.resolveEnvironment === 'function' ? await environments.resolveEnvironment(active) : undefined;
    const executable = resolved?.executable?.uri?.fsPath ?? active.path;
    return typeof executable === 'string' && executable.trim() !== '' ? executable : undefined;
  } catch {
    return undefined;
  }
}

export type CandidateSource = 'python-extension' | 'setting' | 'managed';

export interface Candidate {
  source: CandidateSource;
  python: string;
}

export const SOURCE_LABELS: Record<CandidateSource, string> = {
  'python-extension': "the Python extension's interpreter",
  setting: 'lspAgent.python',
  managed: "the extension's managed environment",
};

/** A version the server reports matches the extension's; a checkout without package metadata is taken as it is. */
export function versionsMatch(server: string, extension: string): boolean {
  const norm = (v: string): string => v.trim().replace(/^v/, '');
  return server === 'source tree' || norm(server) === norm(extension);
}

export function mismatchProblem(python: string, server: string, extension: string): string {
  return `the extension is ${extension}, the server at ${python} is ${server}: update it or let the extension manage its environment`;
}

/** The server's warning at initialize (lsp_agent/server/client_version.py) that it is of another release. */
export function isVersionMismatchMessage(text: string): boolean {
  return /^lsp-agent: the extension is \S+, the server at .* is \S+: update it/.test(text);
}

export const MANAGE_ENV_ACTION = 'Use a Managed Environment';

export type Choice =
  | { kind: 'use'; candidate: Candidate; version: string }
  /** nothing usable: the managed environment may be offered; `fallback` runs (with a mismatch warning) if the user declines */
  | { kind: 'none'; problem: string; fallback?: { candidate: Candidate; version: string } };

export interface ChooseOptions {
  candidates: Candidate[];
  probe(python: string): Promise<ProbeResult>;
  /** undefined: not known, any version is taken */
  extensionVersion: string | undefined;
  /** Restricted Mode: an interpreter inside the workspace is the folder's own program and never runs */
  restricted: boolean;
  workspace?: string | undefined;
  realpath(p: string): string;
  log(message: string): void;
}

/** Probe the candidates in order; the first with a matching lsp-agent wins. */
export async function chooseInterpreter(options: ChooseOptions): Promise<Choice> {
  let firstProblem: string | undefined;
  let fallback: { candidate: Candidate; version: string } | undefined;
  const seen = new Set<string>();
  for (const candidate of options.candidates) {
    const key = path.isAbsolute(candidate.python) ? options.realpath(candidate.python) : candidate.python;
    if (seen.has(key)) {
      continue;
    }
    seen.add(key);
    if (options.restricted && options.workspace && path.isAbsolute(candidate.python) && insideWorkspace(key, options.realpath(options.workspace))) {
      const problem = `VS Code is in Restricted Mode and ${SOURCE_LABELS[candidate.source]} (${candidate.python}) lies inside the workspace: not run. Trust the folder, or use an interpreter outside it.`;
      options.log(problem);
      firstProblem ??= problem;
      continue;
    }
    const probe = await options.probe(candidate.python);
    if (!probe.ok) {
      options.log(`${SOURCE_LABELS[candidate.source]}: ${probe.problem}`);
      firstProblem ??= probe.problem;
      continue;
    }
    if (options.extensionVersion !== undefined && !versionsMatch(probe.version, options.extensionVersion)) {
      const problem = mismatchProblem(candidate.python, probe.version, options.extensionVersion);
      options.log(`${SOURCE_LABELS[candidate.source]}: ${problem}`);
      firstProblem ??= problem;
      fallback ??= { candidate, version: probe.version };
      continue;
    }
    return { kind: 'use', candidate, version: probe.version };
  }
  return { kind: 'none', problem: firstProblem ?? 'no Python interpreter to try', ...(fallback ? { fallback } : {}) };
}

// --- the offer, made once ---------------------------------------------------------------------

export const OFFER_KEY = 'lspAgent.managedEnvOffer';
export type OfferMemory = 'declined' | undefined;

export const CREATE_ENV_ACTION = 'Create Environment';
export const NOT_NOW_ACTION = 'Not Now';

/**
 * Whether to ask before building: not when the user declined before (unless they ran the
 * command), and not when they chose a managed environment earlier (an upgrade rebuilds it).
 */
export function offerDecision(memory: OfferMemory, chosenBefore: boolean, asked: boolean): 'build' | 'ask' | 'skip' {
  if (asked || chosenBefore) {
    return 'build';
  }
  return memory === 'declined' ? 'skip' : 'ask';
}

export function offerMessage(problem: string, version: string): string {
  // The probe's "Fix: …" tells a developer how to install it by hand; the offer is the other fix.
  const reason = problem.replace(/\s*Fix:[\s\S]*$/, '').replace(/\.$/, '');
  return `LSP Agent: ${reason}. Create a Python environment for lsp-agent ${version} in the extension's storage? (It uses a Python 3.11+ from PATH and downloads the dependencies from your package index.)`;
}
