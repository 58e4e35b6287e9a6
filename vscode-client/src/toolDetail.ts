// What an expanded tool row shows: the call's arguments, its whole output, the unified diff of an
// edit (built from the call's own arguments, so no file is read), and for a check the failing
// tests with the first lines of the traceback. Pure: no `vscode`, no I/O. Everything here comes
// from the model or the repository and is escaped when drawn (toolRowHtml.ts).

import type { Entry } from './transcript.js';

/** Output kept per call in memory; beyond it the middle is dropped (the store keeps it all). */
export const OUTPUT_CHARS = 200_000;
/** Lines of a diff drawn per file; the rest is one line saying how many were left out. */
export const DIFF_LINES = 400;
const TRACEBACK_LINES = 12;
const FAILURES_SHOWN = 20;

export type DiffLineKind = 'add' | 'del' | 'ctx' | 'hunk';

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
}

export interface FileDiff {
  path: string;
  /** 'add' (a new file), 'delete', 'update' */
  change: 'add' | 'delete' | 'update';
  lines: DiffLine[];
  /** lines left out past DIFF_LINES */
  omitted: number;
  /** a line of the new text, to find where the change landed in the file (the patch has no line numbers) */
  anchor?: string;
}

export interface FailingTest {
  name: string;
  file?: string;
  line?: number;
}

export interface CheckView {
  status: 'passed' | 'failed' | 'error';
  failures: FailingTest[];
  /** failures beyond those listed */
  moreFailures: number;
  /** the first lines of the check's own output (the traceback) */
  traceback: string[];
}

export interface ToolDetail {
  /** the arguments, pretty-printed */
  args: string;
  diffs: FileDiff[];
  check?: CheckView;
}

/** The output kept for a row: whole when short, else head and tail around a note. */
export function keepOutput(output: string): string {
  if (output.length <= OUTPUT_CHARS) {
    return output;
  }
  const half = Math.floor(OUTPUT_CHARS / 2);
  return `${output.slice(0, half)}\n… ${(output.length - 2 * half).toLocaleString('en-US')} characters left out …\n${output.slice(-half)}`;
}

export function prettyArgs(input: Record<string, unknown> | string): string {
  if (typeof input === 'string') {
    return input;
  }
  return JSON.stringify(input, null, 2);
}

function splitLines(text: string): string[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  if (lines.length > 1 && lines.at(-1) === '') {
    lines.pop();
  }
  return lines;
}

function capped(path: string, change: FileDiff['change'], lines: DiffLine[]): FileDiff {
  const diff: FileDiff = { path, change, lines: lines.slice(0, DIFF_LINES), omitted: Math.max(0, lines.length - DIFF_LINES) };
  const anchor = lines.find((l) => l.kind === 'add' && l.text.trim() !== '') ?? lines.find((l) => l.kind === 'ctx' && l.text.trim() !== '');
  if (anchor) {
    diff.anchor = anchor.text;
  }
  return diff;
}

/** The sections of an apply_patch `patch` ("*** Update File: p", hunks) as file diffs. A patch
 *  that does not parse gives what it could read: the server reports the real error. */
export function patchDiffs(patch: string): FileDiff[] {
  const diffs: FileDiff[] = [];
  let current: { path: string; change: FileDiff['change']; lines: DiffLine[] } | undefined;
  const close = (): void => {
    if (current) {
      diffs.push(capped(current.path, current.change, current.lines));
    }
    current = undefined;
  };
  for (const line of splitLines(patch)) {
    const header = /^\*\*\* (Add|Update|Delete) File: (.+)$/.exec(line);
    if (header) {
      close();
      const change = header[1] === 'Add' ? 'add' : header[1] === 'Delete' ? 'delete' : 'update';
      current = { path: (header[2] ?? '').trim(), change, lines: [] };
      continue;
    }
    const move = /^\*\*\* Move to: (.+)$/.exec(line);
    if (move && current) {
      current.lines.push({ kind: 'hunk', text: `renamed to ${(move[1] ?? '').trim()}` });
      continue;
    }
    if (!current || line.startsWith('*** ')) {
      continue;
    }
    if (line.startsWith('@@')) {
      current.lines.push({ kind: 'hunk', text: line });
    } else if (line.startsWith('+')) {
      current.lines.push({ kind: 'add', text: line.slice(1) });
    } else if (line.startsWith('-')) {
      current.lines.push({ kind: 'del', text: line.slice(1) });
    } else {
      current.lines.push({ kind: 'ctx', text: line.startsWith(' ') ? line.slice(1) : line });
    }
  }
  close();
  return diffs;
}

/** The diffs of an edit call, from its arguments: apply_patch (either form) and write_file. */
export function editDiffs(tool: string, input: Record<string, unknown> | string): FileDiff[] {
  if (typeof input !== 'object') {
    return [];
  }
  const str = (key: string): string | undefined => {
    const value = input[key];
    return typeof value === 'string' ? value : undefined;
  };
  if (tool === 'apply_patch') {
    const patch = str('patch');
    if (patch !== undefined) {
      return patchDiffs(patch);
    }
    const path = str('path');
    const oldText = str('old_text');
    const newText = str('new_text');
    if (path === undefined || oldText === undefined || newText === undefined) {
      return [];
    }
    const lines: DiffLine[] = [
      { kind: 'hunk', text: '@@' },
      ...splitLines(oldText).map((text): DiffLine => ({ kind: 'del', text })),
      ...(newText === '' ? [] : splitLines(newText).map((text): DiffLine => ({ kind: 'add', text }))),
    ];
    return [capped(path, 'update', lines)];
  }
  if (tool === 'write_file') {
    const path = str('path');
    const content = str('content');
    if (path === undefined || content === undefined) {
      return [];
    }
    return [capped(path, 'add', splitLines(content).map((text): DiffLine => ({ kind: 'add', text })))];
  }
  return [];
}

/** The unified diff as text (the copy button). */
export function unifiedText(diff: FileDiff): string {
  const head = diff.change === 'add' ? ['--- /dev/null', `+++ b/${diff.path}`] : diff.change === 'delete' ? [`--- a/${diff.path}`, '+++ /dev/null'] : [`--- a/${diff.path}`, `+++ b/${diff.path}`];
  const sign = { add: '+', del: '-', ctx: ' ', hunk: '' } as const;
  const body = diff.lines.map((l) => (l.kind === 'hunk' ? (l.text.startsWith('@@') ? l.text : `# ${l.text}`) : `${sign[l.kind]}${l.text}`));
  return [...head, ...body].join('\n');
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** The first lines of the check's output section (the traceback), else of the whole output. */
function tracebackOf(output: string): string[] {
  const lines = splitLines(output);
  const start = lines.findIndex((l) => /^\s*output:\s*$/.test(l));
  // Without the raw output (the harness parsed the failures) the check's own lines say where and
  // what failed; the first line is the summary the row's title already shows.
  const from = start >= 0 ? lines.slice(start + 1) : lines.slice(1);
  return from.filter((l) => l.trim() !== '').slice(0, TRACEBACK_LINES).map((l) => l.replace(/^ {2,4}/, ''));
}

/** A verify_project result: its status, failing tests (from the envelope the harness wrote) and
 *  the first lines of the output. Undefined for other tools or a result without an envelope. */
export function checkView(tool: string, output: string | undefined, metadata: unknown): CheckView | undefined {
  if (tool !== 'verify_project') {
    return undefined;
  }
  const envelope = record(record(metadata)?.envelope);
  if (!envelope) {
    return undefined;
  }
  const status = envelope.status === 'passed' || envelope.status === 'failed' ? envelope.status : 'error';
  const failures: FailingTest[] = [];
  let total = 0;
  const checks = Array.isArray(envelope.checks) ? envelope.checks : [];
  for (const check of checks) {
    const list = record(check)?.failures;
    if (!Array.isArray(list)) {
      continue;
    }
    for (const item of list) {
      const failure = record(item);
      if (!failure || typeof failure.message !== 'string') {
        continue;
      }
      total += 1;
      if (failures.length >= FAILURES_SHOWN) {
        continue;
      }
      const test: FailingTest = { name: failure.message };
      if (typeof failure.file === 'string' && failure.file !== '') {
        test.file = failure.file;
      }
      if (typeof failure.line === 'number' && Number.isInteger(failure.line) && failure.line > 0) {
        test.line = failure.line;
      }
      failures.push(test);
    }
  }
  const view: CheckView = { status, failures, moreFailures: total - failures.length, traceback: [] };
  if (status !== 'passed' && output) {
    view.traceback = tracebackOf(output);
  }
  return view;
}

export function toolDetail(tool: string, input: Record<string, unknown> | string, output?: string, metadata?: unknown): ToolDetail {
  const detail: ToolDetail = { args: prettyArgs(input), diffs: editDiffs(tool, input) };
  const check = checkView(tool, output, metadata);
  if (check) {
    detail.check = check;
  }
  return detail;
}

/** The text a copy button of `entry` copies (`args`, `output`, `diff:N`), if there is such a part. */
export function copyText(entry: Entry | undefined, what: string): string | undefined {
  if (entry?.kind === 'text' && entry.final && what === 'text') {
    return entry.text;
  }
  if (!entry || entry.kind !== 'tool') {
    return undefined;
  }
  if (what === 'args') {
    return entry.detail?.args;
  }
  if (what === 'output') {
    return entry.output;
  }
  const diff = /^diff:(\d+)$/.exec(what);
  const file = diff ? entry.detail?.diffs[Number(diff[1])] : undefined;
  return file ? unifiedText(file) : undefined;
}

