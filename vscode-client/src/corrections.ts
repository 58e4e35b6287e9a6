// Turning an editor selection into a correction (Steer With Selection). Pure.

import { MAX_STEER_CHARS } from './protocol.js';

export interface SelectionFacts {
  /** workspace-relative path (or the file name outside the workspace) */
  path: string;
  /** 1-based, inclusive */
  startLine: number;
  endLine: number;
  text: string;
  languageId?: string;
}

function fenceFor(text: string): string {
  const longest = Math.max(0, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  return '`'.repeat(Math.max(3, longest + 1));
}

export function lineRange(selection: Pick<SelectionFacts, 'startLine' | 'endLine'>): string {
  return selection.startLine === selection.endLine
    ? `line ${selection.startLine}`
    : `lines ${selection.startLine}-${selection.endLine}`;
}

/**
 * The correction text: the user's note, then where and what the selection is. Cut to fit the
 * server's limit on corrections (the selection is cut, never the note).
 */
export function selectionCorrection(selection: SelectionFacts, note: string, limit = MAX_STEER_CHARS): string {
  const head = note.trim() || 'Look at this part of the code and correct your course accordingly.';
  const where = `${selection.path}, ${lineRange(selection)}`;
  const build = (body: string, cut: string): string => {
    const fence = fenceFor(body);
    return `${head}\n\nFrom ${where}:\n${fence}${selection.languageId ?? ''}\n${body}\n${fence}${cut}`;
  };
  const full = build(selection.text, '');
  if (full.length <= limit) {
    return full;
  }
  const marker = `\n[selection cut: ${selection.text.length} characters selected]`;
  const overhead = build('', marker).length;
  const room = Math.max(0, limit - overhead);
  return build(selection.text.slice(0, room), marker).slice(0, limit);
}
