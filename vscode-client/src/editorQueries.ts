// agent/editorQuery: the server asks what VS Code's own language features know (definitions,
// references, hover, symbols, diagnostics, implementations, callers) on the model's behalf. This
// module decides which VS Code command answers which kind and turns VS Code's objects into LSP's
// wire types; the editor itself (commands, documents, diagnostics, the language client's converter)
// is reached through small interfaces, so the logic runs without VS Code.

import type {
  CallHierarchyItem,
  DocumentSymbol,
  EditorQueryParams,
  EditorQueryResult,
  HierarchyCall,
  LspDiagnostic,
  LspLocation,
  LspPosition,
  LspRange,
  SymbolInformation,
} from './protocol.gen.js';

export const EDITOR_QUERY = 'agent/editorQuery';

/** Every kind this client answers, in the protocol's order (declared in `initialize`). */
export const EDITOR_QUERY_KINDS = [
  'definition',
  'references',
  'hover',
  'documentSymbols',
  'workspaceSymbols',
  'diagnostics',
  'typeDefinition',
  'implementation',
  'callHierarchy',
] as const satisfies readonly EditorQueryParams['kind'][];

/** The `capabilities.experimental` this client adds in `initialize`; nothing when the setting is off. */
export function editorQueryCapability(enabled: boolean): Record<string, unknown> {
  return enabled ? { lspAgent: { editorQueries: [...EDITOR_QUERY_KINDS] } } : {};
}

// --- VS Code's shapes, as far as they are read here --------------------------------------------

export interface CodePosition {
  readonly line: number;
  readonly character: number;
}
export interface CodeRange {
  readonly start: CodePosition;
  readonly end: CodePosition;
}
export interface CodeUri {
  toString(): string;
}
export interface CodeLocation {
  readonly uri: CodeUri;
  readonly range: CodeRange;
}
/** What a definition provider may give instead of a Location. */
export interface CodeLocationLink {
  readonly targetUri: CodeUri;
  readonly targetRange: CodeRange;
  readonly targetSelectionRange?: CodeRange;
}
export interface CodeMarkdown {
  readonly value: string;
}
/** A hover content: a MarkdownString, a plain string, or the old `{language, value}`. */
export type CodeHoverContent = CodeMarkdown | string | { readonly language: string; readonly value: string };
export interface CodeHover {
  readonly contents: readonly CodeHoverContent[];
}
/** VS Code's document symbols are DocumentSymbols and SymbolInformations at once (either field may be missing). */
export interface CodeSymbol {
  readonly name: string;
  readonly kind: number;
  readonly detail?: string;
  readonly range?: CodeRange;
  readonly selectionRange?: CodeRange;
  readonly children?: readonly CodeSymbol[];
  readonly location?: CodeLocation;
  readonly containerName?: string;
}
export interface CodeCallHierarchyItem {
  readonly name: string;
  readonly kind: number;
  readonly uri: CodeUri;
  readonly range: CodeRange;
  readonly selectionRange: CodeRange;
  readonly detail?: string;
}
export interface CodeIncomingCall {
  readonly from: CodeCallHierarchyItem;
  readonly fromRanges: readonly CodeRange[];
}

/** The language client's code → protocol converter (the methods used here). */
export interface WireConverter {
  asRange(value: never): { start: LspPosition; end: LspPosition };
  asLocation(value: never): { uri: string; range: LspRange };
  asDiagnostic(value: never): LspDiagnostic;
  asSymbolKind(value: never): number;
  asCallHierarchyItem(value: never): CallHierarchyItem;
}

/** What this module asks of VS Code (server.ts binds it to the real API). */
export interface QueryEditor {
  /** The language id of the document (opened without showing it); throws when it cannot be opened. */
  languageOf(uri: string): Promise<string>;
  /** True when some installed extension with code takes part in this language (a language server, usually). */
  hasLanguageFeatures(languageId: string): boolean;
  /** `vscode.commands.executeCommand(command, Uri(uri), Position(position))`. */
  atPosition(command: string, uri: string, position: LspPosition): Promise<unknown>;
  /** `vscode.commands.executeCommand(command, Uri(uri))`. */
  onDocument(command: string, uri: string): Promise<unknown>;
  /** `vscode.commands.executeCommand(command, ...args)`. */
  execute(command: string, ...args: unknown[]): Promise<unknown>;
  /** `vscode.languages.getDiagnostics(Uri(uri))`, or every document's when no uri. */
  diagnostics(uri: string | undefined): [CodeUri, readonly unknown[]][];
}

export type QueryOutcome =
  | { ok: true; result: EditorQueryResult }
  | { ok: false; kind: 'noLanguageServer' | 'notSupported' | 'failed'; message: string };

const LOCATION_COMMANDS = {
  definition: 'vscode.executeDefinitionProvider',
  references: 'vscode.executeReferenceProvider',
  typeDefinition: 'vscode.executeTypeDefinitionProvider',
  implementation: 'vscode.executeImplementationProvider',
} as const;

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}

function isLink(value: CodeLocation | CodeLocationLink): value is CodeLocationLink {
  return (value as Partial<CodeLocationLink>).targetUri !== undefined;
}

function locations(raw: unknown, convert: WireConverter): LspLocation[] {
  return list(raw).map((item) => {
    const found = item as CodeLocation | CodeLocationLink;
    if (isLink(found)) {
      // the name itself rather than the whole declaration: what a person jumps to
      return { uri: found.targetUri.toString(), range: convert.asRange((found.targetSelectionRange ?? found.targetRange) as never) };
    }
    return convert.asLocation(found as never);
  });
}

function hoverText(content: CodeHoverContent): string {
  if (typeof content === 'string') {
    return content;
  }
  if ('language' in content) {
    return '```' + content.language + '\n' + content.value + '\n```';
  }
  return content.value;
}

/** Every provider's hover, one markdown text: a hover's parts as paragraphs, hovers apart by a rule (as VS Code shows them). */
export function hoverMarkdown(raw: unknown): string | undefined {
  const hovers = list(raw)
    .map((hover) => (list((hover as Partial<CodeHover> | null)?.contents) as CodeHoverContent[])
      .map(hoverText)
      .filter((text) => text.trim() !== '')
      .join('\n\n'))
    .filter((text) => text !== '');
  return hovers.length > 0 ? hovers.join('\n\n---\n\n') : undefined;
}

function documentSymbol(symbol: CodeSymbol, convert: WireConverter): DocumentSymbol {
  return {
    name: symbol.name,
    kind: convert.asSymbolKind(symbol.kind as never),
    range: convert.asRange(symbol.range as never),
    selectionRange: convert.asRange((symbol.selectionRange ?? symbol.range) as never),
    ...(symbol.detail ? { detail: symbol.detail } : {}),
    children: (symbol.children ?? []).map((child) => documentSymbol(child, convert)),
  };
}

function symbolInformation(symbol: CodeSymbol, convert: WireConverter): SymbolInformation {
  return {
    name: symbol.name,
    kind: convert.asSymbolKind(symbol.kind as never),
    location: convert.asLocation(symbol.location as never),
    ...(symbol.containerName ? { containerName: symbol.containerName } : {}),
  };
}

/** The outline as DocumentSymbols when every item has its ranges (the wire takes one shape, not a mix). */
export function documentSymbols(raw: unknown, convert: WireConverter): DocumentSymbol[] | SymbolInformation[] {
  const symbols = list(raw) as CodeSymbol[];
  if (symbols.every((s) => s.range !== undefined)) {
    return symbols.map((s) => documentSymbol(s, convert));
  }
  return symbols.filter((s) => s.location !== undefined).map((s) => symbolInformation(s, convert));
}

function calls(raw: unknown, convert: WireConverter): HierarchyCall[] {
  return list(raw).map((item) => {
    const call = item as CodeIncomingCall;
    return { from: convert.asCallHierarchyItem(call.from as never), fromRanges: call.fromRanges.map((r) => convert.asRange(r as never)) };
  });
}

function isEmpty(result: EditorQueryResult): boolean {
  const values = [result.locations, result.symbols, result.calls];
  return result.contents == null && values.every((v) => v == null || v.length === 0);
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Asks VS Code one question; never throws (a failure is an outcome the caller turns into a JSON-RPC error). */
export async function answerEditorQuery(params: unknown, editor: QueryEditor, convert: WireConverter): Promise<QueryOutcome> {
  const asked = (params ?? {}) as Partial<EditorQueryParams>;
  const kind = asked.kind;
  const uri = typeof asked.uri === 'string' ? asked.uri : undefined;
  const position = asked.position ?? undefined;
  if (kind === 'workspaceSymbols') {
    try {
      const raw = await editor.execute('vscode.executeWorkspaceSymbolProvider', asked.query ?? '');
      return { ok: true, result: { symbols: list(raw).map((s) => symbolInformation(s as CodeSymbol, convert)) } };
    } catch (error) {
      return { ok: false, kind: 'failed', message: message(error) };
    }
  }
  if (kind === 'diagnostics') {
    const perDocument = editor.diagnostics(uri).map(([documentUri, items]) => ({
      uri: documentUri.toString(),
      diagnostics: items.map((d) => convert.asDiagnostic(d as never)),
    }));
    // one entry for the document asked about even when clean: "no problems" is an answer
    return { ok: true, result: { diagnostics: uri && perDocument.length === 0 ? [{ uri, diagnostics: [] }] : perDocument } };
  }
  if (kind === undefined || !(EDITOR_QUERY_KINDS as readonly string[]).includes(kind)) {
    return { ok: false, kind: 'notSupported', message: `VS Code does not answer '${String(kind)}' queries` };
  }
  if (!uri) {
    return { ok: false, kind: 'failed', message: `a ${kind} query needs a document` };
  }
  const needsPosition = kind !== 'documentSymbols';
  if (needsPosition && !position) {
    return { ok: false, kind: 'failed', message: `a ${kind} query needs a position` };
  }
  let languageId: string;
  try {
    languageId = await editor.languageOf(uri);
  } catch (error) {
    return { ok: false, kind: 'failed', message: `VS Code could not open the document: ${message(error)}` };
  }
  let result: EditorQueryResult;
  try {
    result = await ask(kind, uri, position as LspPosition, editor, convert);
  } catch (error) {
    return { ok: false, kind: 'failed', message: message(error) };
  }
  // VS Code answers "nothing" both when nothing is there and when no extension provides this kind
  // for the language; only in the second case is there no language server to speak of.
  if (isEmpty(result) && (languageId === 'plaintext' || !editor.hasLanguageFeatures(languageId))) {
    return { ok: false, kind: 'noLanguageServer', message: `no extension in VS Code provides language features for ${languageId}` };
  }
  return { ok: true, result };
}

async function ask(kind: Exclude<EditorQueryParams['kind'], 'workspaceSymbols' | 'diagnostics'>, uri: string,
  position: LspPosition, editor: QueryEditor, convert: WireConverter): Promise<EditorQueryResult> {
  switch (kind) {
    case 'definition':
    case 'references':
    case 'typeDefinition':
    case 'implementation':
      return { locations: locations(await editor.atPosition(LOCATION_COMMANDS[kind], uri, position), convert) };
    case 'hover': {
      const value = hoverMarkdown(await editor.atPosition('vscode.executeHoverProvider', uri, position));
      return { contents: value === undefined ? null : { kind: 'markdown', value } };
    }
    case 'documentSymbols':
      return { symbols: documentSymbols(await editor.onDocument('vscode.executeDocumentSymbolProvider', uri), convert) };
    case 'callHierarchy': {
      const items = list(await editor.atPosition('vscode.prepareCallHierarchy', uri, position));
      const incoming = await Promise.all(items.map((item) => editor.execute('vscode.provideIncomingCalls', item)));
      return { calls: incoming.flatMap((raw) => calls(raw, convert)) };
    }
  }
}
