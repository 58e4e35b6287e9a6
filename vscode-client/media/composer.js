// The composer's webview half: `@` opens a picker of context (the extension answers each query:
// composer.ts), chosen items show as chips above the input (removable), and `/` at the start lists
// the commands. Keys: ↑/↓ move, Enter or Tab picks, Escape closes; Backspace at the start of the
// input removes the last chip, Delete or Backspace on a focused chip removes that one. Enter itself
// (sending) stays with transcript.js; while the picker is open this script takes the keys first.
(function () {
  'use strict';
  // acquireVsCodeApi may be called once per page: transcript.js did, and shares it.
  const vscode = window.lspAgentVscode;
  const post = (message) => vscode.postMessage(message);
  const input = document.getElementById('input');
  const picker = document.getElementById('picker');
  const chips = document.getElementById('chips');
  let commands = [];
  let items = [];
  let active = 0;
  let mode = undefined; // '@' or '/'
  let requestId = 0;
  /** the request whose answer the picker shows */
  let shownRequestId = 0;
  let timer = undefined;

  /** The `@word` just before the caret: [start, query], or undefined. */
  function mentionAtCaret() {
    const before = input.value.slice(0, input.selectionStart);
    const match = /(^|\s)@([^\s@]*)$/.exec(before);
    return match ? [before.length - match[2].length - 1, match[2]] : undefined;
  }

  /** `/word` as the whole text before the caret: the typed name, or undefined. */
  function slashAtCaret() {
    const before = input.value.slice(0, input.selectionStart);
    const match = /^\/([A-Za-z0-9_-]*)$/.exec(before);
    return match ? match[1].toLowerCase() : undefined;
  }

  function close() {
    mode = undefined;
    items = [];
    picker.hidden = true;
    picker.textContent = '';
    input.removeAttribute('aria-activedescendant');
    input.setAttribute('aria-expanded', 'false');
  }

  function show(kind, list, empty) {
    mode = kind;
    items = list;
    active = Math.min(active, Math.max(0, list.length - 1));
    picker.textContent = '';
    if (list.length === 0) {
      const none = document.createElement('div');
      none.className = 'empty';
      none.textContent = empty;
      picker.appendChild(none);
    }
    list.forEach((item, index) => {
      const row = document.createElement('div');
      row.className = 'pick' + (index === active ? ' active' : '');
      row.id = `pick-${index}`;
      row.setAttribute('role', 'option');
      row.setAttribute('aria-selected', String(index === active));
      row.dataset.kind = item.kind;
      const kindEl = document.createElement('span');
      kindEl.className = 'kind';
      kindEl.textContent = item.kind;
      const label = document.createElement('span');
      label.className = 'label';
      label.textContent = item.label;
      const detail = document.createElement('span');
      detail.className = 'detail';
      detail.textContent = item.detail || '';
      row.append(kindEl, label, detail);
      // mousedown, not click: the input keeps the focus (and the caret) while picking
      row.addEventListener('mousedown', (event) => {
        event.preventDefault();
        active = index;
        choose();
      });
      picker.appendChild(row);
    });
    picker.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    if (list.length > 0) {
      input.setAttribute('aria-activedescendant', `pick-${active}`);
      picker.querySelector('.pick.active')?.scrollIntoView({ block: 'nearest' });
    }
  }

  function update() {
    const mention = mentionAtCaret();
    if (mention) {
      mode = '@';
      clearTimeout(timer);
      timer = setTimeout(() => {
        requestId += 1;
        post({ type: 'contextQuery', requestId, query: mention[1] });
      }, 60);
      return;
    }
    const typed = slashAtCaret();
    if (typed !== undefined) {
      if (mode !== '/') {
        post({ type: 'slashOpen' }); // prompt files may have changed: the extension reads them again
      }
      active = 0;
      const list = commands
        .filter((c) => c.name.startsWith(typed))
        .map((c) => ({ kind: 'command', label: `/${c.name}`, detail: c.description, name: c.name }));
      show('/', list, 'no such command');
      return;
    }
    close();
  }

  function setInput(value, caret) {
    input.value = value;
    input.setSelectionRange(caret, caret);
    // transcript.js keeps the draft on `input`
    input.dispatchEvent(new Event('input'));
  }

  function choose() {
    const item = items[active];
    if (!item) {
      close();
      return;
    }
    if (mode === '/') {
      const rest = input.value.slice(input.selectionStart);
      setInput(`/${item.name} ${rest.trimStart()}`, item.name.length + 2);
      close();
      return;
    }
    const mention = mentionAtCaret();
    if (mention) {
      const [start] = mention;
      const after = input.value.slice(input.selectionStart);
      setInput(input.value.slice(0, start) + after, start);
    }
    // the answer the item was shown in: a newer query still being gathered does not replace it
    post({ type: 'pickContext', id: item.id, requestId: shownRequestId });
    close();
  }

  /** Which chip button takes the focus once the extension sends the chips back (-1: the input). */
  let focusAfterChips = -1;

  /** Remove a chip; the focus goes to the next chip's button (the one before at the end), else the input. */
  function removeChip(key, button) {
    const buttons = Array.from(chips.querySelectorAll('.chip button'));
    const at = buttons.indexOf(button);
    focusAfterChips = at < 0 ? -1 : Math.min(at, buttons.length - 2);
    post({ type: 'removeChip', key });
    if (focusAfterChips < 0) {
      input.focus();
    }
  }

  function renderChips(list) {
    chips.textContent = '';
    chips.hidden = list.length === 0;
    for (const chip of list) {
      const el = document.createElement('span');
      el.className = 'chip';
      el.dataset.key = chip.key;
      el.dataset.kind = chip.kind;
      el.title = `${chip.kind}: ${chip.label}`;
      const label = document.createElement('span');
      label.className = 'label';
      label.textContent = chip.label;
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.textContent = '×';
      remove.setAttribute('aria-label', `Remove ${chip.label}`);
      remove.addEventListener('click', () => removeChip(chip.key, remove));
      // Delete or Backspace on a focused chip removes it, as in a text field
      remove.addEventListener('keydown', (event) => {
        if (event.key === 'Delete' || event.key === 'Backspace') {
          event.preventDefault();
          removeChip(chip.key, remove);
        }
      });
      el.setAttribute('role', 'listitem');
      el.append(label, remove);
      chips.appendChild(el);
    }
    if (focusAfterChips >= 0) {
      const buttons = chips.querySelectorAll('.chip button');
      (buttons[focusAfterChips] || input).focus();
      focusAfterChips = -1;
    }
  }

  window.addEventListener('message', (event) => {
    const message = event.data;
    switch (message.type) {
      case 'contextItems':
        if (message.requestId === requestId && mode === '@' && mentionAtCaret()) {
          shownRequestId = message.requestId;
          active = 0;
          show('@', message.items, 'nothing matches');
        }
        break;
      case 'chips':
        renderChips(message.chips);
        break;
      case 'slashCommands':
        commands = message.commands;
        if (mode === '/') {
          update();
        }
        break;
    }
  });

  input.addEventListener('input', update);
  input.addEventListener('click', update);
  input.addEventListener('blur', () => setTimeout(close, 100));

  /**
   * Keys for the chips from the input: Backspace with the caret at the very start removes the last
   * chip (nothing of the text is lost); Shift+Tab reaches the chips' buttons as usual.
   */
  function chipKeys(event) {
    if (event.key !== 'Backspace' || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    if (input.selectionStart !== 0 || input.selectionEnd !== 0) {
      return;
    }
    const last = Array.from(chips.querySelectorAll('.chip')).at(-1);
    if (last) {
      event.preventDefault();
      post({ type: 'removeChip', key: last.dataset.key });
    }
  }

  // Capturing on the document runs before transcript.js's Enter handler on the input.
  document.addEventListener(
    'keydown',
    (event) => {
      if (event.target === input && picker.hidden) {
        chipKeys(event);
        return;
      }
      if (event.target !== input || picker.hidden) {
        return;
      }
      const take = () => {
        event.preventDefault();
        event.stopPropagation();
      };
      switch (event.key) {
        case 'ArrowDown':
          take();
          active = items.length ? (active + 1) % items.length : 0;
          show(mode, items, '');
          break;
        case 'ArrowUp':
          take();
          active = items.length ? (active - 1 + items.length) % items.length : 0;
          show(mode, items, '');
          break;
        case 'Enter':
        case 'Tab':
          if (event.shiftKey || event.isComposing || items.length === 0) {
            return;
          }
          if (event.key === 'Enter' && mode === '/' && items[active] && slashAtCaret() === items[active].name) {
            close(); // the command is typed out: Enter runs it (transcript.js sends it)
            return;
          }
          take();
          choose();
          break;
        case 'Escape':
          take();
          close();
          break;
      }
    },
    true,
  );
})();
