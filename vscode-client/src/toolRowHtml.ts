// A tool call as a collapsible row of the transcript: one summary line (status, tool, the path or
// command, error kind, elapsed time), and when expanded the arguments, the output (head and tail
// when long, with "open in editor"), each edit's unified diff and a check's failing tests with the
// first traceback lines. A failing check starts expanded. Pure string building: every value is
// escaped (tool output and file names come from the model and the repository).

import { escapeHtml } from './html.js';
import type { CheckView, FileDiff } from './toolDetail.js';
import type { ToolEntry } from './transcript.js';

/** Output longer than this many lines shows its head and tail, with "open in editor" for all. */
export const OUTPUT_HEAD_LINES = 30;
export const OUTPUT_TAIL_LINES = 20;

const TOOL_ICON = { running: '…', completed: '✓', error: '✗' } as const;
const SIGN = { add: '+', del: '-', ctx: ' ', hunk: '' } as const;

export function copyButton(what: string, label: string): string {
  return `<button type="button" class="copy" data-copy="${escapeHtml(what)}" title="Copy ${escapeHtml(label)}">Copy</button>`;
}

/** "Restore to here" on a prompt, a step or a tool call: the extension asks what to restore
 *  (the command is on the transcript's allow-list; the argument is the message to go back before). */
export function restoreButton(messageID: string | undefined): string {
  if (!messageID) {
    return '';
  }
  return (
    `<button type="button" class="restore" data-command="lspAgent.restoreToHere" data-arg="${escapeHtml(messageID)}" ` +
    'title="Restore the code, the conversation or both to before this" aria-label="Restore to here">Restore to here</button>'
  );
}

/** A link that opens a workspace file (at a line, or where `find` occurs); the extension checks the path. */
export function fileLink(path: string, text: string, at: { line?: number; find?: string } = {}): string {
  const line = at.line !== undefined ? ` data-open-line="${at.line}"` : '';
  const find = at.find !== undefined ? ` data-open-find="${escapeHtml(at.find.slice(0, 200))}"` : '';
  const where = at.line !== undefined ? `:${at.line}` : '';
  return `<a href="#" class="file-link" data-open-path="${escapeHtml(path)}"${line}${find} title="Open ${escapeHtml(path)}${where}">${escapeHtml(text)}</a>`;
}

export function renderDiff(diff: FileDiff, index: number, generation: string): string {
  const label = diff.change === 'add' ? ' <span class="diff-change">new file</span>' : diff.change === 'delete' ? ' <span class="diff-change">deleted</span>' : '';
  const at = diff.anchor !== undefined ? { find: diff.anchor } : {};
  const head =
    `<div class="diff-head">${diff.change === 'delete' ? escapeHtml(diff.path) : fileLink(diff.path, diff.path, at)}${label} ` +
    copyButton(`diff:${index}`, 'the diff') +
    `<button type="button" class="open-diff" data-command="lspAgent.reviewChanges" data-arg="${escapeHtml(generation)}" title="Open the run's changes in the diff editor">Diff editor</button></div>`;
  const body = diff.lines
    .map((l) => `<span class="d-${l.kind}">${escapeHtml(l.kind === 'hunk' ? l.text : `${SIGN[l.kind]}${l.text}`)}</span>`)
    .join(''); // each line is a block (its background spans the width): no newline between them
  const more = diff.omitted ? `<div class="gap">… ${diff.omitted} more line${diff.omitted === 1 ? '' : 's'} (open the diff editor) …</div>` : '';
  return `<div class="diff">${head}<pre class="diff-body">${body}</pre>${more}</div>`;
}

export function renderCheck(check: CheckView): string {
  if (check.status === 'passed') {
    return '<div class="check check-passed">The check passed.</div>';
  }
  const count = check.failures.length + check.moreFailures;
  const title = check.status === 'failed' ? `${count} failing` : 'The check could not run';
  const items = check.failures
    .map((f) => `<li>${f.file ? fileLink(f.file, f.name, f.line !== undefined ? { line: f.line } : {}) : escapeHtml(f.name)}</li>`)
    .join('');
  const more = check.moreFailures ? `<li class="more">… ${check.moreFailures} more</li>` : '';
  const traceback = check.traceback.length ? `<pre class="traceback">${escapeHtml(check.traceback.join('\n'))}</pre>` : '';
  return `<div class="check check-${check.status}"><div class="check-title">${escapeHtml(title)}</div>${items || more ? `<ul class="failures">${items}${more}</ul>` : ''}${traceback}</div>`;
}

export function renderOutput(output: string): string {
  const lines = output.split('\n');
  const total = lines.length;
  const head = `<div class="label">Output (${total} line${total === 1 ? '' : 's'}) ${copyButton('output', 'the output')}`;
  if (total <= OUTPUT_HEAD_LINES + OUTPUT_TAIL_LINES) {
    return `<div class="section output">${head}</div><pre>${escapeHtml(output)}</pre></div>`;
  }
  const hidden = total - OUTPUT_HEAD_LINES - OUTPUT_TAIL_LINES;
  return (
    `<div class="section output">${head}<button type="button" class="open-output" title="Open the whole output in an editor">Open in editor</button></div>` +
    `<pre>${escapeHtml(lines.slice(0, OUTPUT_HEAD_LINES).join('\n'))}</pre>` +
    `<div class="gap">… ${hidden} line${hidden === 1 ? '' : 's'} not shown …</div>` +
    `<pre>${escapeHtml(lines.slice(-OUTPUT_TAIL_LINES).join('\n'))}</pre></div>`
  );
}

/** True when the row starts expanded: a failing check, so its tests and traceback are seen. */
export function startsOpen(entry: ToolEntry): boolean {
  const check = entry.detail?.check;
  return check !== undefined && check.status !== 'passed';
}

export function renderToolRow(entry: ToolEntry): string {
  const input = entry.input ? ` <code>${escapeHtml(entry.input)}</code>` : '';
  const kind = entry.errorKind ? ` <span class="error-kind">${escapeHtml(entry.errorKind)}</span>` : '';
  const summary = entry.summary ? ` <span class="summary">${escapeHtml(entry.summary)}</span>` : '';
  const elapsed = entry.elapsedMs != null ? ` <span class="elapsed">${entry.elapsedMs} ms</span>` : '';
  const detail = entry.detail;
  const check = detail?.check ? renderCheck(detail.check) : '';
  const diffs = (detail?.diffs ?? []).map((d, i) => renderDiff(d, i, entry.generation)).join('');
  const args = detail?.args
    ? `<div class="section args"><div class="label">Arguments ${copyButton('args', 'the arguments')}</div><pre>${escapeHtml(detail.args)}</pre></div>`
    : '';
  const output = entry.output != null ? renderOutput(entry.output) : entry.status === 'running' ? '<div class="gap">running…</div>' : '';
  const classes = ['entry', 'tool', `status-${entry.status}`];
  if (detail?.check) {
    classes.push(`check-${detail.check.status}`);
  }
  if (detail?.diffs.length) {
    classes.push('edit');
  }
  return (
    `<details class="${classes.join(' ')}" data-key="${escapeHtml(entry.key)}"${startsOpen(entry) ? ' open data-default-open' : ''}>` +
    `<summary tabindex="-1"><span class="icon">${TOOL_ICON[entry.status]}</span> <b>${escapeHtml(entry.tool)}</b>${input}${kind}${summary}${elapsed}${restoreButton(entry.messageID)}</summary>` +
    `<div class="tool-body">${check}${diffs}${args}${output}</div></details>`
  );
}
