// The transcript webview's script: draws the HTML the extension renders (transcriptHtml.ts),
// keeps the agent input's draft and focus known to the extension, and sends Enter as submit.
// Ctrl+S is not handled here: VS Code forwards the key to its keybindings, and "Steer Now"
// asks this page for the draft (getDraft) before it acts.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
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

  function render(html) {
    const stick = atBottom();
    transcript.innerHTML = html;
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
        input.value = '';
        remember();
        vscode.postMessage({ type: 'draft', text: '' });
        break;
      case 'focusInput':
        input.focus();
        break;
    }
  });

  // Buttons (Stop, Sessions…, Review changes) name an LSP Agent command; the extension runs only
  // the ones it allows (transcriptView.ts).
  document.addEventListener('click', (event) => {
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
