// The transcript webview's script: draws the HTML the extension renders (transcriptHtml.ts),
// keeps the agent input's draft and focus known to the extension, and sends Enter as submit.
// Ctrl+S is not handled here: VS Code forwards the key to its keybindings, and "Steer Now"
// asks this page for the draft (getDraft) before it acts.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  window.lspAgentVscode = vscode; // composer.js (the @ picker, chips, / list) posts through it too
  const transcript = document.getElementById('transcript');
  const input = document.getElementById('input');
  const state = document.getElementById('state');
  const stop = document.getElementById('stop');
  const saved = vscode.getState() || {};
  input.value = saved.draft || '';

  // Rows the user expanded or collapsed by hand; other rows keep the state they are drawn with
  // (a failing check starts expanded).
  const toggled = new Map(Object.entries(saved.toggled || {}));
  const entries = document.getElementById('entries');
  const approvals = document.getElementById('approvals');
  const waiting = document.getElementById('waiting');
  /** key → row element, so a patch finds the row to replace without a query per row */
  const rows = new Map();

  function remember() {
    vscode.setState({ draft: input.value, toggled: Object.fromEntries(toggled) });
  }

  function atBottom() {
    return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  }

  /** What has focus inside the transcript, so a redraw does not take it from a keyboard user. */
  function focusedTarget() {
    const active = document.activeElement;
    if (!active || !transcript.contains(active)) {
      return undefined;
    }
    if (active.dataset.approval) {
      return `[data-approval="${active.dataset.approval}"][data-decision="${active.dataset.decision}"]`;
    }
    const row = active.closest('[data-key]');
    if (row) {
      return `[data-key="${CSS.escape(row.dataset.key)}"]`;
    }
    return undefined;
  }

  /** A freshly drawn row: focusable for the keyboard, its expanded state as the user left it. */
  function adopt(row) {
    if (!(row instanceof HTMLElement) || !row.dataset.key) {
      return;
    }
    rows.set(row.dataset.key, row);
    if (!row.hasAttribute('tabindex')) {
      row.tabIndex = -1;
    }
    if (row.tagName === 'DETAILS') {
      const choice = toggled.get(row.dataset.key);
      if (choice !== undefined) {
        row.open = choice;
      }
    }
  }

  function parse(html) {
    const template = document.createElement('template');
    template.innerHTML = html;
    return template.content;
  }

  function restoreFocus(focused) {
    if (focused && !transcript.contains(document.activeElement)) {
      transcript.querySelector(focused)?.focus();
    }
  }

  function drawSides(message, focused) {
    const before = new Set(Array.from(approvals.querySelectorAll('.approval')).map((e) => e.dataset.key));
    approvals.innerHTML = message.approvals || '';
    waiting.innerHTML = message.waiting || '';
    restoreFocus(focused);
    // A new question takes the focus only when the input does not have it: a keystroke meant for
    // the input never lands on a button; the card itself (not a button) is focused, Tab goes on.
    const fresh = Array.from(approvals.querySelectorAll('.approval')).find((e) => !before.has(e.dataset.key));
    if (fresh && !focused && document.activeElement !== input && document.hasFocus()) {
      fresh.focus();
    }
  }

  /** Everything again: a new webview, or rows dropped or reordered. */
  function render(message) {
    const stick = atBottom();
    const focused = focusedTarget();
    rows.clear();
    entries.replaceChildren(parse(message.html));
    for (const row of entries.children) {
      adopt(row);
    }
    drawSides(message, focused);
    restoreFocus(focused);
    if (stick) {
      transcript.scrollTop = transcript.scrollHeight;
    }
  }

  /** Only the rows that changed: replaced in place, or appended at the end. */
  function patch(message) {
    const stick = atBottom();
    const focused = focusedTarget();
    if (message.rows.length) {
      entries.querySelector(':scope > .empty')?.remove();
    }
    // rows past the transcript's limit drop off the top
    for (const key of message.removed || []) {
      rows.get(key)?.remove();
      rows.delete(key);
    }
    for (const { key, html } of message.rows) {
      const fresh = parse(html).firstElementChild;
      if (!fresh) {
        continue;
      }
      const old = rows.get(key);
      if (old && old.isConnected) {
        old.replaceWith(fresh);
      } else {
        entries.appendChild(fresh);
      }
      adopt(fresh);
    }
    drawSides(message, focused);
    restoreFocus(focused);
    if (stick) {
      transcript.scrollTop = transcript.scrollHeight;
    }
  }

  // The user's own expand / collapse is kept across redraws and reloads ("toggle" does not bubble).
  entries.addEventListener(
    'toggle',
    (event) => {
      const row = event.target;
      if (row instanceof HTMLElement && row.dataset.key) {
        toggled.set(row.dataset.key, row.open);
        remember();
      }
    },
    true,
  );

  /** The rows a keyboard user moves between (entries and approval cards). */
  function rowList() {
    return Array.from(transcript.querySelectorAll('#entries > [data-key], #approvals > [data-key], #waiting [data-key]'));
  }

  function moveFocus(from, delta) {
    const list = rowList();
    if (!list.length) {
      return;
    }
    const index = from ? list.indexOf(from) : -1;
    const next = index < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, index + delta));
    list[next].focus();
    list[next].scrollIntoView({ block: 'nearest' });
  }

  // Arrow keys or j/k move between rows, Home/End to the first/last, Enter or Space expands or
  // collapses the focused row, Escape goes back to the input. Keys typed in a button or link keep their own meaning.
  transcript.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    const target = event.target;
    if (!(target instanceof HTMLElement)) {
      return;
    }
    const onRow = target === transcript || (target.dataset.key !== undefined && target.parentElement !== null);
    if (!onRow) {
      return;
    }
    const row = target === transcript ? undefined : target;
    switch (event.key) {
      case 'ArrowDown':
      case 'j':
        event.preventDefault();
        moveFocus(row, 1);
        return;
      case 'ArrowUp':
      case 'k':
        event.preventDefault();
        moveFocus(row, -1);
        return;
      case 'Home':
        event.preventDefault();
        rowList()[0]?.focus();
        return;
      case 'End':
        event.preventDefault();
        rowList().at(-1)?.focus();
        return;
      case 'Escape':
        // back to the input, where the keyboard user came from
        event.preventDefault();
        input.focus();
        return;
      case 'Enter':
      case ' ':
        if (row && row.tagName === 'DETAILS') {
          event.preventDefault();
          row.open = !row.open;
          toggled.set(row.dataset.key, row.open);
          remember();
        }
        return;
    }
  });

  const modeButton = document.getElementById('mode');
  const modelButton = document.getElementById('model');

  /** The composer's mode and model buttons say what the next run uses (each opens its picker). */
  function showChoices(choices) {
    if (!choices || !modeButton || !modelButton) {
      return;
    }
    modeButton.textContent = `${choices.mode} ▾`;
    modeButton.setAttribute('aria-label', `Mode: ${choices.mode}. Choose a mode`);
    modelButton.textContent = `${choices.model} ▾`;
    modelButton.setAttribute('aria-label', `Model: ${choices.model}. Choose a model`);
  }

  window.addEventListener('message', (event) => {
    const message = event.data;
    switch (message.type) {
      case 'render':
      case 'patch':
        if (message.type === 'render') {
          render(message);
        } else {
          patch(message);
        }
        state.textContent = message.status;
        showChoices(message.choices);
        state.classList.toggle('running', Boolean(message.running));
        stop.hidden = !message.running;
        // a running task's files and history are still moving: nothing is restored under it
        for (const button of transcript.querySelectorAll('button.restore')) {
          button.disabled = Boolean(message.running);
          button.title = message.running ? 'Stop the task (or wait for it to finish) to restore' : 'Restore the code, the conversation or both to before this';
        }
        break;
      case 'getDraft':
        vscode.postMessage({ type: 'draftReply', requestId: message.requestId, text: input.value });
        break;
      case 'setDraft':
        input.value = message.text;
        remember();
        vscode.postMessage({ type: 'draft', text: input.value });
        input.focus();
        break;
      case 'clearDraft':
        // the composer names the text it sent: what was typed since then stays
        if (typeof message.ifText === 'string' && input.value !== message.ifText) {
          break;
        }
        input.value = '';
        remember();
        vscode.postMessage({ type: 'draft', text: '' });
        break;
      case 'focusInput':
        // A focus asked for while the page was loading arrives late: if the user has moved on (the
        // command palette, an editor), taking the cursor back would close or interrupt what they opened.
        if (message.unlessMovedOn && !document.hasFocus()) {
          break;
        }
        input.focus();
        break;
      case 'focusApproval': {
        const card = transcript.querySelector(`[data-key="approval:${Number(message.id)}"]`);
        if (card) {
          card.scrollIntoView({ block: 'nearest' });
          card.focus();
        }
        break;
      }
    }
  });

  // Buttons (Stop, Sessions…, Review changes) name an LSP Agent command; the extension runs only
  // the ones it allows (transcriptView.ts).
  document.addEventListener('click', (event) => {
    const approve = event.target instanceof Element ? event.target.closest('[data-approval]') : null;
    if (approve) {
      event.preventDefault();
      vscode.postMessage({ type: 'approve', id: Number(approve.dataset.approval), decision: approve.dataset.decision });
      return;
    }
    const element = event.target instanceof Element ? event.target : null;
    const link = element?.closest('[data-open-path]');
    if (link) {
      event.preventDefault();
      const line = Number(link.dataset.openLine);
      vscode.postMessage({
        type: 'openFile',
        path: link.dataset.openPath,
        ...(Number.isInteger(line) && line > 0 ? { line } : {}),
        ...(link.dataset.openFind ? { find: link.dataset.openFind } : {}),
      });
      return;
    }
    const row = element?.closest('#entries > [data-key]');
    const copy = element?.closest('[data-copy]');
    if (copy && row) {
      event.preventDefault();
      vscode.postMessage({ type: 'copy', key: row.dataset.key, what: copy.dataset.copy });
      return;
    }
    if (element?.closest('.open-output') && row) {
      event.preventDefault();
      vscode.postMessage({ type: 'openOutput', key: row.dataset.key });
      return;
    }
    const target = element?.closest('[data-command]');
    if (target) {
      event.preventDefault();
      vscode.postMessage({ type: 'command', id: target.dataset.command, arg: target.dataset.arg });
    }
  });

  input.addEventListener('input', () => {
    remember();
    vscode.postMessage({ type: 'draft', text: input.value });
  });

  input.addEventListener('keydown', (event) => {
    // Escape leaves the input for the transcript: an open approval question first (so a keyboard
    // user answers it without tabbing through the footer), else the newest row. composer.js takes
    // Escape first while its picker is open.
    if (event.key === 'Escape' && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey) {
      const target = approvals.querySelector('.approval[data-key]') || rowList().at(-1);
      if (target) {
        event.preventDefault();
        target.focus();
        target.scrollIntoView({ block: 'nearest' });
      }
      return;
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (input.value.trim() !== '') {
        vscode.postMessage({ type: 'submit', text: input.value });
      }
    }
  });

  // The ctrl+s keybinding is enabled while the input or the transcript has focus.
  document.addEventListener('focusin', () => vscode.postMessage({ type: 'focus', focused: true }));
  document.addEventListener('focusout', (event) => {
    if (!event.relatedTarget) {
      vscode.postMessage({ type: 'focus', focused: false });
    }
  });
  window.addEventListener('blur', () => vscode.postMessage({ type: 'focus', focused: false }));

  vscode.postMessage({ type: 'draft', text: input.value });
  vscode.postMessage({ type: 'ready' });
})();
