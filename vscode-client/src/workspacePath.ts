// Which file a transcript link may open. The path in a link comes from the model (a diff, a tool
// argument) or from the repository (a failing test's file), both untrusted: a link may only open
// a file inside the workspace folder, never an absolute path, a parent directory, another scheme,
// or a symlink that leads out of the folder (a repository can ship `notes -> /home/you/.ssh`).

import * as fs from 'node:fs';
import * as path from 'node:path';

export type LinkRefusal = 'empty' | 'absolute' | 'parent' | 'control' | 'outside' | 'missing';

export type LinkTarget = { ok: true; file: string } | { ok: false; reason: LinkRefusal };

const MAX_PATH = 4096;

/** The file a link's workspace-relative path names, checked to lie inside `root`. */
export function resolveLinkPath(root: string, rel: string): LinkTarget {
  if (rel === '' || rel.length > MAX_PATH) {
    return { ok: false, reason: 'empty' };
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f]/.test(rel)) {
    return { ok: false, reason: 'control' };
  }
  if (path.isAbsolute(rel) || path.win32.isAbsolute(rel) || /^[a-z][a-z0-9+.-]*:/i.test(rel)) {
    return { ok: false, reason: 'absolute' };
  }
  if (rel.split(/[\\/]/).includes('..')) {
    return { ok: false, reason: 'parent' };
  }
  let realRoot: string;
  let realFile: string;
  try {
    realRoot = fs.realpathSync(root);
    realFile = fs.realpathSync(path.join(root, rel));
  } catch {
    return { ok: false, reason: 'missing' };
  }
  const inside = path.relative(realRoot, realFile);
  if (inside === '' || inside.startsWith('..') || path.isAbsolute(inside)) {
    return { ok: false, reason: 'outside' };
  }
  return { ok: true, file: realFile };
}

export const LINK_REFUSAL_TEXT: Record<LinkRefusal, string> = {
  empty: 'the link names no file',
  absolute: 'the link names an absolute path; only files in the workspace are opened',
  parent: 'the link leaves the workspace folder (..)',
  control: 'the link contains control characters',
  outside: 'the link leads outside the workspace folder (through a symbolic link)',
  missing: 'the file does not exist (any more)',
};
