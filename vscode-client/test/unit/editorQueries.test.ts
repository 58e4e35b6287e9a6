import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { EDITOR_QUERY_KINDS, answerEditorQuery, editorQueryCapability } from '../../src/editorQueries.js';
import type { CodeRange, QueryEditor, WireConverter } from '../../src/editorQueries.js';

const FILE = 'file:///ws/src/util.ts';

function range(line: number, start: number, end: number): CodeRange {
  return { start: { line, character: start }, end: { line, character: end } };
}

function uri(value: string): { toString(): string } {
  return { toString: () => value };
}

/** The language client's converter as far as it matters here: VS Code's 0-based kinds and severities become LSP's 1-based ones. */
const convert = {
  asRange: (r: CodeRange) => ({ start: { ...r.start }, end: { ...r.end } }),
  asLocation: (l: { uri: { toString(): string }; range: CodeRange }) => ({ uri: l.uri.toString(), range: convert.asRange(l.range) }),
  asDiagnostic: (d: { range: CodeRange; message: string; severity: number }) => ({ range: convert.asRange(d.range), message: d.message, severity: d.severity + 1 }),
  asSymbolKind: (k: number) => k + 1,
  asCallHierarchyItem: (i: { name: string; kind: number; uri: { toString(): string }; range: CodeRange; selectionRange: CodeRange }) => ({
    name: i.name, kind: i.kind + 1, uri: i.uri.toString(), range: convert.asRange(i.range), selectionRange: convert.asRange(i.selectionRange),
  }),
};
const converter = convert as unknown as WireConverter;

interface Calls { commands: { command: string; args: unknown[] }[] }

function editor(answers: Record<string, unknown>, options: { language?: string; features?: boolean; diagnostics?: [string, unknown[]][] } = {}): QueryEditor & Calls {
  const commands: Calls['commands'] = [];
  const run = (command: string, ...args: unknown[]): Promise<unknown> => {
    commands.push({ command, args });
    const answer = answers[command];
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };
  return {
    commands,
    languageOf: () => Promise.resolve(options.language ?? 'typescript'),
    hasLanguageFeatures: () => options.features ?? true,
    atPosition: (command, u, position) => run(command, u, position),
    onDocument: (command, u) => run(command, u),
    execute: (command, ...args) => run(command, ...args),
    diagnostics: (u) => (options.diagnostics ?? []).filter(([d]) => !u || d === u).map(([d, items]) => [uri(d), items]),
  };
}

const at = { line: 4, character: 9 };

describe('editor query capability', () => {
  it('declares every kind when on and nothing when off', () => {
    assert.deepEqual(editorQueryCapability(true), { lspAgent: { editorQueries: [...EDITOR_QUERY_KINDS] } });
    assert.equal(EDITOR_QUERY_KINDS.length, 9);
    assert.deepEqual(editorQueryCapability(false), {});
  });
});

describe('answerEditorQuery', () => {
  it('turns locations and location links into LSP locations (a link points at the name)', async () => {
    const vs = editor({
      'vscode.executeDefinitionProvider': [
        { targetUri: uri('file:///ws/src/a.ts'), targetRange: range(2, 0, 40), targetSelectionRange: range(2, 16, 21) },
        { uri: uri('file:///ws/src/b.ts'), range: range(7, 2, 7) },
      ],
    });
    const outcome = await answerEditorQuery({ kind: 'definition', uri: FILE, position: at }, vs, converter);
    assert.deepEqual(outcome, { ok: true, result: { locations: [
      { uri: 'file:///ws/src/a.ts', range: range(2, 16, 21) },
      { uri: 'file:///ws/src/b.ts', range: range(7, 2, 7) },
    ] } });
    assert.deepEqual(vs.commands, [{ command: 'vscode.executeDefinitionProvider', args: [FILE, at] }]);
  });

  it('asks the matching provider for references, type definitions and implementations', async () => {
    for (const [kind, command] of [['references', 'vscode.executeReferenceProvider'], ['typeDefinition', 'vscode.executeTypeDefinitionProvider'],
      ['implementation', 'vscode.executeImplementationProvider']] as const) {
      const vs = editor({ [command]: [{ uri: uri(FILE), range: range(1, 0, 3) }] });
      const outcome = await answerEditorQuery({ kind, uri: FILE, position: at }, vs, converter);
      assert.deepEqual(outcome, { ok: true, result: { locations: [{ uri: FILE, range: range(1, 0, 3) }] } }, kind);
    }
  });

  it('joins every hover into one markdown text, code blocks for the old language form', async () => {
    const vs = editor({ 'vscode.executeHoverProvider': [
      { contents: [{ value: '```typescript\nfunction add(a: number): number\n```' }, 'Adds.'] },
      { contents: [{ language: 'typescript', value: 'const x: 1' }, ''] },
    ] });
    const outcome = await answerEditorQuery({ kind: 'hover', uri: FILE, position: at }, vs, converter);
    assert.deepEqual(outcome, { ok: true, result: { contents: { kind: 'markdown', value:
      '```typescript\nfunction add(a: number): number\n```\n\nAdds.\n\n---\n\n```typescript\nconst x: 1\n```' } } });
  });

  it('gives the outline as DocumentSymbols with children and LSP kinds', async () => {
    const method = { name: 'area', kind: 5, range: range(3, 2, 5), selectionRange: range(3, 2, 6), children: [] };
    const vs = editor({ 'vscode.executeDocumentSymbolProvider': [
      { name: 'Shape', kind: 4, detail: 'class', range: range(2, 0, 9), selectionRange: range(2, 13, 18), children: [method],
        location: { uri: uri(FILE), range: range(2, 0, 9) } },
    ] });
    const outcome = await answerEditorQuery({ kind: 'documentSymbols', uri: FILE }, vs, converter);
    assert.deepEqual(outcome, { ok: true, result: { symbols: [{ name: 'Shape', kind: 5, detail: 'class', range: range(2, 0, 9),
      selectionRange: range(2, 13, 18), children: [{ name: 'area', kind: 6, range: range(3, 2, 5), selectionRange: range(3, 2, 6), children: [] }] }] } });
  });

  it('gives workspace symbols as SymbolInformation for the query', async () => {
    const vs = editor({ 'vscode.executeWorkspaceSymbolProvider': [
      { name: 'add', kind: 11, containerName: 'util', location: { uri: uri(FILE), range: range(0, 16, 19) } },
    ] });
    const outcome = await answerEditorQuery({ kind: 'workspaceSymbols', query: 'add' }, vs, converter);
    assert.deepEqual(outcome, { ok: true, result: { symbols: [
      { name: 'add', kind: 12, containerName: 'util', location: { uri: FILE, range: range(0, 16, 19) } },
    ] } });
    assert.deepEqual(vs.commands, [{ command: 'vscode.executeWorkspaceSymbolProvider', args: ['add'] }]);
  });

  it('gives the incoming calls of the item at the position', async () => {
    const item = { name: 'add', kind: 11, uri: uri(FILE), range: range(0, 0, 30), selectionRange: range(0, 16, 19) };
    const caller = { name: 'main', kind: 11, uri: uri('file:///ws/src/main.ts'), range: range(3, 0, 9), selectionRange: range(3, 9, 13) };
    const vs = editor({ 'vscode.prepareCallHierarchy': [item], 'vscode.provideIncomingCalls': [{ from: caller, fromRanges: [range(4, 2, 5)] }] });
    const outcome = await answerEditorQuery({ kind: 'callHierarchy', uri: FILE, position: at }, vs, converter);
    assert.deepEqual(outcome, { ok: true, result: { calls: [{ from: { name: 'main', kind: 12, uri: 'file:///ws/src/main.ts', range: range(3, 0, 9),
      selectionRange: range(3, 9, 13) }, fromRanges: [range(4, 2, 5)] }] } });
    assert.deepEqual(vs.commands[1], { command: 'vscode.provideIncomingCalls', args: [item] });
  });

  it('reports the problems of a document, an empty list when it has none, and of every document when no uri', async () => {
    const problem = { range: range(1, 0, 4), message: "Type 'string' is not assignable to type 'number'.", severity: 0 };
    const vs = editor({}, { diagnostics: [[FILE, [problem]], ['file:///ws/src/b.ts', []]] });
    assert.deepEqual(await answerEditorQuery({ kind: 'diagnostics', uri: FILE }, vs, converter), { ok: true, result: { diagnostics: [
      { uri: FILE, diagnostics: [{ range: range(1, 0, 4), message: problem.message, severity: 1 }] },
    ] } });
    assert.deepEqual(await answerEditorQuery({ kind: 'diagnostics', uri: 'file:///ws/clean.ts' }, vs, converter),
      { ok: true, result: { diagnostics: [{ uri: 'file:///ws/clean.ts', diagnostics: [] }] } });
    const all = await answerEditorQuery({ kind: 'diagnostics' }, vs, converter);
    assert.deepEqual(all.ok && all.result.diagnostics?.map((d) => d.uri), [FILE, 'file:///ws/src/b.ts']);
  });

  it('says no language server, naming the language, when nothing answers and no extension serves it', async () => {
    const rust = editor({ 'vscode.executeDefinitionProvider': [] }, { language: 'rust', features: false });
    assert.deepEqual(await answerEditorQuery({ kind: 'definition', uri: 'file:///ws/lib.rs', position: at }, rust, converter),
      { ok: false, kind: 'noLanguageServer', message: 'no extension in VS Code provides language features for rust' });
    const plain = editor({ 'vscode.executeHoverProvider': undefined }, { language: 'plaintext', features: true });
    const outcome = await answerEditorQuery({ kind: 'hover', uri: 'file:///ws/notes.txt', position: at }, plain, converter);
    assert.equal(!outcome.ok && outcome.kind, 'noLanguageServer');
  });

  it('gives an empty answer (not an error) when a served language has nothing there', async () => {
    const vs = editor({ 'vscode.executeReferenceProvider': [] }, { language: 'typescript', features: true });
    assert.deepEqual(await answerEditorQuery({ kind: 'references', uri: FILE, position: at }, vs, converter), { ok: true, result: { locations: [] } });
    const hover = editor({ 'vscode.executeHoverProvider': [] });
    assert.deepEqual(await answerEditorQuery({ kind: 'hover', uri: FILE, position: at }, hover, converter), { ok: true, result: { contents: null } });
  });

  it('classifies a failing provider, an unopenable document, an unknown kind and a missing position', async () => {
    const failing = editor({ 'vscode.executeDefinitionProvider': new Error('tsserver crashed') });
    assert.deepEqual(await answerEditorQuery({ kind: 'definition', uri: FILE, position: at }, failing, converter),
      { ok: false, kind: 'failed', message: 'tsserver crashed' });
    const unopenable = { ...editor({}), languageOf: () => Promise.reject(new Error('cannot open file:///ws/gone.ts')) };
    const gone = await answerEditorQuery({ kind: 'hover', uri: 'file:///ws/gone.ts', position: at }, unopenable, converter);
    assert.equal(!gone.ok && gone.kind, 'failed');
    const unknown = await answerEditorQuery({ kind: 'rename', uri: FILE, position: at }, editor({}), converter);
    assert.equal(!unknown.ok && unknown.kind, 'notSupported');
    const nowhere = await answerEditorQuery({ kind: 'definition', uri: FILE }, editor({}), converter);
    assert.equal(!nowhere.ok && nowhere.kind, 'failed');
  });
});
