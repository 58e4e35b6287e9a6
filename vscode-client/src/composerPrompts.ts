// Custom `/` commands: the Markdown files of a prompts directory (the user's own, or a workspace's
// `.lsp-agent/prompts/`). A workspace directory is the repository's content, so it is read the way
// untrusted input is: regular files only (a symlink could point at a secret outside the folder, a
// FIFO would block the extension host), a bounded number of bounded files. Whether a workspace's
// prompts are offered at all is decided by composerModel.workspacePromptsAllowed.

import { constants, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { PromptFile } from './composerModel.js';

/** Most prompt files read from one directory. */
export const MAX_PROMPT_FILES = 100;
/** Largest prompt file read, in bytes; a larger one is skipped. */
export const MAX_PROMPT_BYTES = 32 * 1024;

/** The user's own prompts: $XDG_CONFIG_HOME/lsp-agent/prompts (default ~/.config/lsp-agent/prompts). */
export function userPromptsDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'lsp-agent', 'prompts');
}

export function workspacePromptsDir(root: string): string {
  return path.join(root, '.lsp-agent', 'prompts');
}

/** One file's text when it is a regular file (not a link, FIFO, device) of at most MAX_PROMPT_BYTES. */
async function readRegular(file: string): Promise<string | undefined> {
  let handle: fs.FileHandle | undefined;
  try {
    // O_NOFOLLOW: a symlink is refused by the open itself (no check-then-open race);
    // O_NONBLOCK: a FIFO planted under the name cannot hang the open.
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stat = await handle.stat();
    if (!stat.isFile() || stat.size > MAX_PROMPT_BYTES) {
      return undefined;
    }
    const buffer = Buffer.alloc(MAX_PROMPT_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_PROMPT_BYTES) {
      return undefined; // grew since the stat
    }
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

/** True when `dir` and every folder between `below` and it is a real directory, not a symlink. */
async function plainDirectory(dir: string, below: string | undefined): Promise<boolean> {
  const chain = [dir];
  if (below !== undefined) {
    const rel = path.relative(below, dir);
    if (rel.startsWith('..') || path.isAbsolute(rel)) {
      return false;
    }
    for (let at = path.dirname(dir); at.length > below.length && at.startsWith(below); at = path.dirname(at)) {
      chain.push(at);
    }
  }
  for (const entry of chain) {
    if (!(await fs.lstat(entry)).isDirectory()) {
      return false; // a symlinked `.lsp-agent` or prompts folder could lead anywhere
    }
  }
  return true;
}

/**
 * The `*.md` prompt files of `dir` (none when it does not exist or is not a plain directory). With
 * `below` (the workspace root), no folder from there down to `dir` may be a symlink either.
 */
export async function readPromptDir(dir: string, below?: string): Promise<PromptFile[]> {
  try {
    if (!(await plainDirectory(dir, below))) {
      return [];
    }
    const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.md')).sort().slice(0, MAX_PROMPT_FILES);
    const files: PromptFile[] = [];
    for (const name of names) {
      const text = await readRegular(path.join(dir, name));
      if (text !== undefined) {
        files.push({ name: name.slice(0, -'.md'.length), text });
      }
    }
    return files;
  } catch {
    return [];
  }
}
