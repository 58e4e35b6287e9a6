// The VS Code side of agent/editorQuery (editorQueries.ts decides; this binds it to the real API):
// the capability declared in `initialize`, VS Code's commands, documents and diagnostics, and the
// JSON-RPC error an unanswerable query becomes. Read-only queries, so Restricted Mode changes nothing.

import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import type { FeatureState, LanguageClient, StaticFeature } from 'vscode-languageclient/node';

import { EDITOR_QUERY, answerEditorQuery, editorQueryCapability } from './editorQueries.js';
import type { CodeUri, QueryEditor, WireConverter } from './editorQueries.js';
import { CONFIG_SECTION, ErrorCodes } from './protocol.js';

/** `lspAgent.editorQueries.enabled` (default on): read at each (re)start, as capabilities are. */
function enabled(): boolean {
  return vscode.workspace.getConfiguration(CONFIG_SECTION).get<boolean>('editorQueries.enabled', true);
}

interface ExtensionManifest {
  main?: unknown;
  browser?: unknown;
  activationEvents?: unknown;
  contributes?: { languages?: { id?: unknown }[] };
}

/** An installed extension with code that starts for this language or contributes it. */
function hasLanguageFeatures(languageId: string): boolean {
  return vscode.extensions.all.some((extension) => {
    const manifest = extension.packageJSON as ExtensionManifest;
    if (!manifest.main && !manifest.browser) {
      return false; // grammar and snippet extensions know the language but answer nothing
    }
    const events = Array.isArray(manifest.activationEvents) ? (manifest.activationEvents as unknown[]) : [];
    const contributed = (manifest.contributes?.languages ?? []).some((language) => language.id === languageId);
    return contributed || events.includes(`onLanguage:${languageId}`);
  });
}

const editor: QueryEditor = {
  async languageOf(uri) {
    return (await vscode.workspace.openTextDocument(vscode.Uri.parse(uri))).languageId;
  },
  hasLanguageFeatures,
  async atPosition(command, uri, position) {
    return vscode.commands.executeCommand(command, vscode.Uri.parse(uri), new vscode.Position(position.line, position.character));
  },
  async onDocument(command, uri) {
    return vscode.commands.executeCommand(command, vscode.Uri.parse(uri));
  },
  async execute(command, ...args) {
    return vscode.commands.executeCommand(command, ...args);
  },
  diagnostics(uri): [CodeUri, readonly unknown[]][] {
    if (uri) {
      const parsed = vscode.Uri.parse(uri);
      return [[parsed, vscode.languages.getDiagnostics(parsed)]];
    }
    return vscode.languages.getDiagnostics();
  },
};

/** Declares the kinds this client answers in `capabilities.experimental`. */
class EditorQueryCapability implements StaticFeature {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, ...editorQueryCapability(enabled()) };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

/** Before `start()`: the capability, and the handler of the server's questions. */
export function registerEditorQueries(client: LanguageClient): void {
  client.registerFeature(new EditorQueryCapability());
  const convert = client.code2ProtocolConverter as unknown as WireConverter;
  client.onRequest(EDITOR_QUERY, async (params: unknown) => {
    const outcome = await answerEditorQuery(params, editor, convert);
    if (outcome.ok) {
      return outcome.result;
    }
    return new ResponseError(ErrorCodes.internal, outcome.message, { kind: outcome.kind });
  });
}
