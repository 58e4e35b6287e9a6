// The real extension as a user's editor loads it: the esbuild bundle of src/extension.ts, required
// with a stand-in `vscode` module (test/helpers/vscodeStub.ts), so activation runs the shipped code.

import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

import * as esbuild from 'esbuild';

/** vscode-client/ (the tests run from out/test/<dir>/). */
export const CLIENT_ROOT = path.join(__dirname, '..', '..', '..');

export interface BundledExtension {
  activate(context: unknown): Promise<void>;
  deactivate(): Promise<void>;
}

/** The extension bundled as the .vsix carries it (text, not written anywhere yet). */
export async function bundleExtension(): Promise<string> {
  const bundle = await esbuild.build({
    entryPoints: [path.join(CLIENT_ROOT, 'src', 'extension.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
    write: false,
    logLevel: 'silent',
  });
  return bundle.outputFiles[0]!.text;
}

/**
 * The bundle written to `dir` and required with `vscode` as `stub` (the module the bundle's
 * `require('vscode')` resolves to reads it from a global). A fresh `dir` gives a fresh module.
 */
export function loadBundle(dir: string, bundleText: string, stub: unknown): BundledExtension {
  mkdirSync(path.join(dir, 'node_modules', 'vscode'), { recursive: true });
  writeFileSync(path.join(dir, 'extension.js'), bundleText);
  writeFileSync(path.join(dir, 'node_modules', 'vscode', 'index.js'), 'module.exports = globalThis.__lspAgentVscodeStub;\n');
  (globalThis as Record<string, unknown>).__lspAgentVscodeStub = stub;
  return createRequire(__filename)(path.join(dir, 'extension.js')) as BundledExtension;
}

/** An ExtensionContext memento (workspaceState, globalState) kept in `map`. */
export function memento(map = new Map<string, unknown>()): { get(key: string): unknown; update(key: string, value: unknown): Promise<unknown> } {
  return { get: (key: string) => map.get(key), update: (key: string, value: unknown) => Promise.resolve(map.set(key, value)) };
}

/** Wait for `probe` to hold, polling the event loop; a bound, never a fixed sleep. */
export async function waitFor(probe: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
