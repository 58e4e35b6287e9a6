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
  const open = new Set(saved.open || []);
  input.value = saved.draft || '';

  function remember() {
    vscode.setState({ draft: input.value, open: Array.from(open) });
  }

  function atBottom() {
    return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  }

  /** What has focus inside the transcript, so a re-render does not take it from a keyboard user. */
  function focusedTarget() {
    const active = document.activeElement;
    if (!active || !transcript.contains(active)) {
      return undefined;
    }
    if (active.dataset.approval) {
      return `[data-approval="${active.dataset.approval}"][data-decision="${active.dataset.decision}"]`;
    }
    if (active.dataset.key) {
      return `[data-key="${CSS.escape(active.dataset.key)}"]`;
    }
    return undefined;
  }

  function render(html) {
    const stick = atBottom();
    const focused = focusedTarget();
    const before = new Set(Array.from(transcript.querySelectorAll('.approval')).map((e) => e.dataset.key));
    transcript.innerHTML = html;
    if (focused) {
      transcript.querySelector(focused)?.focus();
    }
    // A new question takes the focus only when the input does not have it: a keystroke meant for
    // the input never lands on a button; the card itself (not a button) is focused, Tab goes on.
    const fresh = Array.from(transcript.querySelectorAll('.approval')).find((e) => !before.has(e.dataset.key));
    if (fresh && !focused && document.activeElement !== input && document.hasFocus()) {
      fresh.focus();
    }
    for (const details of transcript.querySelectorAll('details[data-key]')) {
      if (open.has(details.dataset.key)) {
        details.open = true;
      }
      details.addEventListener('toggle', () => {
        if (details.open) {
          open.add(details.dataset.key);
        } else {
          open.delete(details.dataset.key);
        }
        remember();
      });
    }
    if (stick) {
      transcript.scrollTop = transcript.scrollHeight;
    }
  }

  window.addEventListener('message', (event) => {
    const message = event.data;
    switch (message.type) {
      case 'render':
        render(message.html);
        state.textContent = message.status;
        state.classList.toggle('running', Boolean(message.running));
        stop.hidden = !message.running;
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
    const target = event.target instanceof Element ? event.target.closest('[data-command]') : null;
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
