// VS Code settings (`lspAgent.*`) → the server's settings layer (initializationOptions,
// workspace/didChangeConfiguration and workspace/configuration answers). Pure: the caller reads
// the configuration; this module decides what the server gets.
//
// Only values the user actually set are sent: an unset VS Code setting leaves the value to
// `.lsp-agent/config.toml` (the editor layer wins over the files, so sending defaults would
// silently override a project's config). Client-only settings (python, trace) never reach the
// server, which rejects unknown keys.

import * as path from 'node:path';

import { CONFIG_SECTION } from './protocol.js';

/** VS Code setting (under `lspAgent.experimental.`) → the server's experimental flag. */
export const EXPERIMENTAL_FLAGS = {
  contextRecovery: 'context_recovery',
  mcpToolDiscovery: 'mcp_tool_discovery',
  tailReminders: 'tail_reminders',
  readOnlyRecipes: 'read_only_recipes',
} as const;

/** Settings the server reads (relative to `lspAgent.`). */
export const SERVER_KEYS = ['model', 'providers', 'maxSteps', 'script', 'approvalPolicy', 'approvalTimeoutS', 'experimental'] as const;
/** Settings that only matter when the server process starts (the interpreter; capabilities sent in `initialize`). */
export const RESTART_KEYS = ['python', 'editorQueries.enabled'] as const;

/**
 * Settings a repository's `.vscode/settings.json` must not decide while VS Code is in Restricted
 * Mode: the interpreter that is started, where requests and keys go, limits and approvals. The
 * manifest lists the same keys in `capabilities.untrustedWorkspaces.restrictedConfigurations`.
 */
export const RESTRICTED_KEYS = ['python', 'model', 'providers', 'maxSteps', 'script', 'approvalPolicy', 'approvalTimeoutS'] as const;

/** What `WorkspaceConfiguration.inspect` reports for one setting. */
export interface InspectedSetting {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * The value the user set: the most specific scope, except that in Restricted Mode a restricted
 * setting is read from the user's own (global) settings only (`inspect` reports the workspace's
 * values whatever the trust, so this is decided here, not left to VS Code).
 */
export function userSettingValue(key: string, inspected: InspectedSetting | undefined, workspaceTrusted: boolean): unknown {
  if (!inspected) {
    return undefined;
  }
  if (!workspaceTrusted && (RESTRICTED_KEYS as readonly string[]).includes(key.split('.')[0] ?? key)) {
    return inspected.globalValue;
  }
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/** True when the interpreter would be a file inside the workspace (a repository's own program). */
export function insideWorkspace(python: string, workspaceFolder: string | undefined): boolean {
  if (!workspaceFolder || !path.isAbsolute(python)) {
    return false;
  }
  const relative = path.relative(path.resolve(workspaceFolder), path.resolve(python));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Reads one setting (relative to `lspAgent.`): its value when the user set it, else undefined. */
export type ReadSetting = (key: string) => unknown;

export type ServerSettings = Record<string, unknown>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function serverSettings(read: ReadSetting): ServerSettings {
  const out: ServerSettings = {};
  const model = read('model');
  if (typeof model === 'string' && model.trim() !== '') {
    out.model = model.trim();
  }
  const maxSteps = read('maxSteps');
  if (maxSteps !== undefined && maxSteps !== null) {
    out.maxSteps = maxSteps; // the server validates it (and says so once when it is wrong)
  }
  const providers = read('providers');
  if (isRecord(providers) && Object.keys(providers).length > 0) {
    out.providers = providers;
  }
  const script = read('script');
  if (typeof script === 'string' && script.trim() !== '') {
    out.script = script.trim();
  }
  // approval policy (approval.ts, docs/security.md): passed through, the server validates them
  for (const key of ['approvalPolicy', 'approvalTimeoutS'] as const) {
    const value = read(key);
    if (value !== undefined && value !== null && value !== '') {
      out[key] = value;
    }
  }
  const experimental: Record<string, boolean> = {};
  for (const [setting, flag] of Object.entries(EXPERIMENTAL_FLAGS)) {
    const value = read(`experimental.${setting}`);
    if (typeof value === 'boolean') {
      experimental[flag] = value;
    }
  }
  if (Object.keys(experimental).length > 0) {
    out.experimental = experimental;
  }
  return out;
}

export interface PythonContext {
  platform: NodeJS.Platform;
  workspaceFolder?: string;
  home?: string;
  env?: Record<string, string | undefined>;
}

/** The interpreter to run the server with: the setting with variables expanded, or a default. */
export function pythonCommand(setting: unknown, context: PythonContext): string {
  const raw = typeof setting === 'string' ? setting.trim() : '';
  if (raw === '') {
    return context.platform === 'win32' ? 'python' : 'python3';
  }
  let value = raw.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (match, name: string, envName?: string) => {
    if (name === 'workspaceFolder') {
      return context.workspaceFolder ?? match;
    }
    if (name === 'userHome') {
      return context.home ?? match;
    }
    return envName ? (context.env?.[envName] ?? '') : match;
  });
  if (context.home && (value === '~' || value.startsWith('~/'))) {
    value = path.join(context.home, value.slice(1));
  }
  if (context.workspaceFolder && !path.isAbsolute(value) && (value.includes('/') || value.includes('\\'))) {
    // `.venv/bin/python` means: inside the workspace (a bare `python3` is looked up on PATH).
    value = path.join(context.workspaceFolder, value);
  }
  return value;
}

export interface SettingsChange {
  /** the server process must start again (a different interpreter, different capabilities) */
  restart: boolean;
  /** the server's settings layer changed: send workspace/didChangeConfiguration */
  push: boolean;
}

/** What a configuration change means, from VS Code's `affectsConfiguration`. */
export function classifyChange(affects: (section: string) => boolean): SettingsChange {
  const restart = RESTART_KEYS.some((key) => affects(`${CONFIG_SECTION}.${key}`));
  const push = SERVER_KEYS.some((key) => affects(`${CONFIG_SECTION}.${key}`));
  return { restart, push };
}

/** Settings sent as `workspace/didChangeConfiguration` (the server reads the `lspAgent` key). */
export function didChangeConfigurationParams(settings: ServerSettings): { settings: Record<string, ServerSettings> } {
  return { settings: { [CONFIG_SECTION]: settings } };
}

/**
 * The answer to `workspace/configuration`: our mapped settings for the `lspAgent` section (and
 * its sub-keys), the fallback for any other section.
 */
export function answerConfiguration(
  items: readonly { section?: string | null }[],
  settings: ServerSettings | null,
  fallback: (section: string | undefined, index: number) => unknown,
): unknown[] {
  return items.map((item, index) => {
    const section = item.section ?? undefined;
    if (section === CONFIG_SECTION) {
      return settings;
    }
    if (settings === null && section?.startsWith(`${CONFIG_SECTION}.`)) {
      return null;
    }
    if (section?.startsWith(`${CONFIG_SECTION}.`)) {
      let node: unknown = settings;
      for (const part of section.slice(CONFIG_SECTION.length + 1).split('.')) {
        node = isRecord(node) ? node[part] : undefined;
      }
      return node ?? null;
    }
    return fallback(section, index);
  });
}

/** Dotted paths of the leaves of a settings object (`experimental.context_recovery`, `providers.local.baseUrl`). */
export function leafPaths(value: unknown, prefix = ''): string[] {
  if (!isRecord(value) || (prefix !== '' && Object.keys(value).length === 0)) {
    return prefix ? [prefix] : [];
  }
  return Object.entries(value).flatMap(([key, child]) => leafPaths(child, prefix ? `${prefix}.${key}` : key));
}

/** JSON with object keys sorted, so equal settings compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isRecord(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

export type SettingsPlan =
  | { kind: 'push'; params: { settings: Record<string, ServerSettings> } }
  | { kind: 'restart'; removed: string[] };

/**
 * Keeps the server's two client layers in step with VS Code. The server merges
 * initializationOptions (sent once) under the `lspAgent` section (replaced by every
 * didChangeConfiguration), so:
 * - the configuration pull is answered with null while the settings still equal the
 *   initializationOptions (the same values twice would be validated, and reported, twice);
 * - a change is pushed as the new section, except when a value that was in the
 *   initializationOptions is gone: no section can remove it, only a restart can.
 */
export class SettingsSync {
  private initial: ServerSettings | undefined;

  /** The initializationOptions of a (re)start. */
  initializationOptions(current: ServerSettings): ServerSettings {
    this.initial = current;
    return current;
  }

  /** The `lspAgent` section for a workspace/configuration answer. */
  section(current: ServerSettings): ServerSettings | null {
    return this.initial !== undefined && sameJson(current, this.initial) ? null : current;
  }

  plan(current: ServerSettings): SettingsPlan {
    const now = new Set(leafPaths(current));
    const removed = leafPaths(this.initial ?? {}).filter((p) => !now.has(p) && ![...now].some((n) => n.startsWith(`${p}.`)));
    return removed.length > 0 ? { kind: 'restart', removed } : { kind: 'push', params: didChangeConfigurationParams(current) };
  }
}
