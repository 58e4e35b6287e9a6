// HTML for the transcript webview: entries → escaped markup, and the page shell with its CSP.
// Pure string building, so what the view shows is unit-tested without VS Code.

import { DECISION_LABELS } from './approval.js';
import type { ApprovalCard } from './approvalCards.js';
import { escapeHtml } from './html.js';
import { renderMarkdown } from './markdown.js';
import { copyButton, renderToolRow, restoreButton } from './toolRowHtml.js';
import { finishSummary, firstLine, formatTokens, stopLine, verificationNote, verificationWords } from './transcript.js';
import type { Entry } from './transcript.js';

export { escapeHtml };

const VERIFICATION_LABEL = { verified: 'verified', failed: 'failed', not_run: 'not run' } as const;

function attr(key: string): string {
  return `data-key="${escapeHtml(key)}"`;
}

export function renderEntry(entry: Entry): string {
  switch (entry.kind) {
    case 'prompt':
      return (
        `<div class="entry prompt" ${attr(entry.key)}><div class="who">${entry.source === 'queue' ? 'You (queued)' : 'You'}${restoreButton(entry.messageID)}</div>` +
        `<pre>${escapeHtml(entry.text)}</pre></div>`
      );
    case 'step': {
      const of = entry.maxSteps ? `${entry.step}/${entry.maxSteps}` : String(entry.step);
      const usage = entry.tokens ? ` <span class="usage">${escapeHtml(formatTokens(entry.tokens))}</span>` : '';
      return `<div class="entry step" ${attr(entry.key)}>Step ${of}${usage}${restoreButton(entry.messageID)}</div>`;
    }
    case 'text':
      // Markdown (sanitised: markdown.ts); the streaming cursor is drawn by CSS.
      // a finished message can be copied as the model wrote it (its Markdown source)
      return (
        `<div class="entry text markdown${entry.final ? '' : ' streaming'}" ${attr(entry.key)}>` +
        `${entry.final ? copyButton('text', 'the message') : ''}${renderMarkdown(entry.text)}</div>`
      );
    case 'reasoning':
      return (
        `<details class="entry reasoning" ${attr(entry.key)}><summary>Thinking: ${escapeHtml(firstLine(entry.text, 120))}</summary>` +
        `<pre>${escapeHtml(entry.text)}</pre></details>`
      );
    case 'tool':
      return renderToolRow(entry);
    case 'notice':
      return `<div class="entry notice" ${attr(entry.key)}>⚠ ${escapeHtml(entry.noticeKind)}: ${escapeHtml(entry.message)}</div>`;
    case 'error':
      return `<div class="entry error" ${attr(entry.key)}>✗ ${escapeHtml(entry.errorKind)}: ${escapeHtml(entry.message)}</div>`;
    case 'steer': {
      const why = entry.reason
        ? ` <span class="reason">${escapeHtml(entry.reason)}${entry.detail ? `: ${escapeHtml(entry.detail)}` : ''}</span>`
        : '';
      return (
        `<div class="entry steer receipt-${entry.status}" ${attr(entry.key)}><div class="who">Correction ` +
        `<span class="badge">${escapeHtml(entry.status)}</span>${why}</div><pre>${escapeHtml(entry.text)}</pre></div>`
      );
    }
    case 'finish': {
      const error = entry.error ? `<div class="error">${escapeHtml(entry.error.message)}</div>` : '';
      const why = verificationNote(entry);
      const note = why ? `<div class="downgrade" role="note" aria-label="Why not verified">${escapeHtml(why)}</div>` : '';
      const review = entry.filesChanged.length
        ? `<div class="actions"><button type="button" class="review" data-command="lspAgent.reviewChanges" data-arg="${escapeHtml(entry.generation)}" aria-label="Review changes">Review changes (${entry.filesChanged.length})</button></div>`
        : '';
      return (
        `<div class="entry finish verification-${entry.verification}" ${attr(entry.key)} tabindex="-1">` +
        `<div class="verdict"><span class="badge">${VERIFICATION_LABEL[entry.verification]}</span> ${escapeHtml(verificationWords(entry))}</div>` +
        `<div class="facts">${escapeHtml(finishSummary(entry))}</div>${error}${note}${review}</div>`
      );
    }
    case 'stop':
      return `<div class="entry stop" ${attr(entry.key)} tabindex="-1">${escapeHtml(stopLine(entry))}</div>`;
    case 'info':
      return `<div class="entry info" ${attr(entry.key)}>${escapeHtml(entry.message)}</div>`;
  }
}

export function renderEntries(entries: readonly Entry[]): string {
  if (entries.length === 0) {
    return '<div class="empty">No run yet. Type a task below and press Enter, or run “LSP Agent: Run Task”.</div>';
  }
  return entries.map(renderEntry).join('\n');
}

/**
 * The open approval questions as cards: the exact command (or diff) as code, why it is asked,
 * one real button per option (Tab / Shift+Tab / Enter / Space, no mouse needed), each described
 * by what that choice covers. Nothing in it is focused by itself: a keystroke meant for the input
 * never answers a question.
 */
export function renderApprovals(cards: readonly ApprovalCard[]): string {
  return cards
    .map((card) => {
      const id = String(card.id);
      const buttons = card.choices
        .map(
          (c) =>
            `<button type="button" class="approve ${c.decision}" data-approval="${id}" data-decision="${c.decision}" aria-describedby="approval-${id}-${c.decision}">${escapeHtml(c.label)}</button>`,
        )
        .join('');
      const covers = card.choices
        .map((c) => `<li id="approval-${id}-${c.decision}"><b>${escapeHtml(DECISION_LABELS[c.decision])}</b>: ${escapeHtml(c.covers)}</li>`)
        .join('');
      return (
        `<section class="entry approval" data-key="approval:${id}" role="group" aria-labelledby="approval-${id}-title" tabindex="-1">` +
        `<div class="who" id="approval-${id}-title">The agent wants to ${escapeHtml(card.subject)} <span class="badge">approval</span></div>` +
        `<pre><code class="approval-what">${escapeHtml(card.what)}</code></pre>` +
        `<div class="why">Why you are asked: ${escapeHtml(card.why)}</div>` +
        `<div class="actions">${buttons}</div><ul class="covers">${covers}</ul></section>`
      );
    })
    .join('\n');
}

/** A prompt typed before the server or the model was there, with why it waits. */
export interface WaitingView {
  id: number;
  text: string;
}

/**
 * The waiting prompts below the transcript: each says why it waits and offers what unblocks it
 * (choose a model), to try again now, or to take it back into the input for editing.
 */
export function renderWaiting(items: readonly WaitingView[], reason: string | undefined): string {
  if (items.length === 0) {
    return '';
  }
  const why = reason ?? 'sending…';
  const choose = reason && /model/.test(reason)
    ? '<button type="button" class="choose-model" data-command="lspAgent.chooseModel">Choose a model…</button>'
    : '';
  const rows = items.map((item) => {
    const id = escapeHtml(String(item.id));
    return (
      `<div class="entry prompt waiting" data-key="waiting:${id}" role="group" aria-label="Waiting prompt">` +
      `<div class="who">You <span class="badge">waiting</span> <span class="reason">${escapeHtml(why)}</span></div>` +
      `<pre>${escapeHtml(item.text)}</pre>` +
      `<div class="actions">${choose}` +
      `<button type="button" class="send-waiting" data-command="lspAgent.sendWaiting" data-arg="${id}">Send now</button>` +
      `<button type="button" class="withdraw-waiting" data-command="lspAgent.withdrawWaiting" data-arg="${id}" title="Take it back into the input">Edit</button>` +
      `</div></div>`
    );
  });
  return `<section class="waiting-prompts" aria-label="Prompts waiting to be sent">${rows.join('\n')}</section>`;
}

/**
 * The offer to run the plan a Plan-mode run ended with: one real button (Tab, Enter), at the end of
 * the transcript where the plan was just read.
 */
export function renderPlanOffer(offered: boolean): string {
  if (!offered) {
    return '';
  }
  return (
    '<section class="entry plan-offer" data-key="plan-offer" tabindex="-1" aria-label="The plan is ready">' +
    '<span class="who">The plan is ready.</span> ' +
    '<button type="button" class="run-plan" data-command="lspAgent.runPlan" title="Back to Agent mode; the plan becomes the next task">Run It in Agent Mode</button>' +
    '</section>'
  );
}

export interface ShellOptions {
  nonce: string;
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  /** the composer's `@` picker, chips and `/` list (media/composer.js, composer.css) */
  composerScriptUri?: string;
  composerStyleUri?: string;
}

/** The webview page: transcript above, the agent input (composer) below. */
export function renderShell(options: ShellOptions): string {
  const csp = [
    "default-src 'none'",
    `style-src ${options.cspSource}`,
    `script-src 'nonce-${options.nonce}'`,
    `font-src ${options.cspSource}`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(options.styleUri)}">
${options.composerStyleUri ? `<link rel="stylesheet" href="${escapeHtml(options.composerStyleUri)}">\n` : ''}<title>LSP Agent</title>
</head>
<body>
<main id="transcript" tabindex="0" aria-label="Transcript: arrow keys or j/k move between rows, Enter expands"><div id="entries" aria-live="polite"></div><div id="approvals"></div><div id="waiting"></div></main>
<footer>
<div class="bar"><div id="state" class="state" role="status"></div>
<button type="button" id="stop" class="stop" aria-label="Stop" title="Stop the running task (LSP Agent: Cancel)" data-command="lspAgent.cancel" hidden>■ Stop</button>
<button type="button" id="sessions" aria-label="Past sessions" title="Reopen a past session's transcript (LSP Agent: Open Past Session…)" data-command="lspAgent.openSession">Sessions…</button></div>
<div class="choices" role="toolbar" aria-label="Mode and model"><button type="button" id="mode" class="choice" data-command="lspAgent.chooseMode" title="Choose a mode (LSP Agent: Choose a Mode)">Agent</button><button type="button" id="model" class="choice" data-command="lspAgent.chooseModel" title="Choose a model (LSP Agent: Choose a Model)">model</button></div>
<div id="chips" class="chips" role="list" aria-label="Attached context (Backspace at the start of the input removes the last; Delete removes the focused one)" hidden></div>
<div id="picker" class="picker" role="listbox" aria-label="Attach context" hidden></div>
<textarea id="input" rows="3" placeholder="Task, follow-up or correction… (@ attaches context, / for commands)" aria-label="Agent input" aria-autocomplete="list"></textarea>
<div class="hint">Enter: run (or queue while running) · Shift+Enter: new line · Ctrl+S: steer now · @: context · /: commands · Escape: to the transcript</div>
</footer>
<script nonce="${options.nonce}" src="${escapeHtml(options.scriptUri)}"></script>
${options.composerScriptUri ? `<script nonce="${options.nonce}" src="${escapeHtml(options.composerScriptUri)}"></script>\n` : ''}</body>
</html>`;
}
