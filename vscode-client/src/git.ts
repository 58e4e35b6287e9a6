// GitOps (changes.ts) with the git program: the state before a run, a file at a commit, and
// whether git ignores a path. Async child processes (never blocking the extension host), with
// a timeout; any failure reads as "no git" / "not there", which only makes a change unrevertable.

import { execFile } from 'node:child_process';

import type { GitOps, GitState } from './changes.js';

const TIMEOUT_MS = 10_000;
const MAX_BYTES = 64 * 1024 * 1024;

interface Run {
  code: number;
  stdout: Buffer;
}

function git(root: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'git',
      // no pager, no external diff or textconv: plain object reads only
      ['-c', 'core.quotePath=false', ...args],
      { cwd: root, encoding: 'buffer', timeout: TIMEOUT_MS, maxBuffer: MAX_BYTES, windowsHide: true },
      (error, stdout) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout });
      },
    );
  });
}

/** `git status --porcelain=v1 -z` entries → the paths (renames are off, so one path each). */
export function parseStatus(output: string): Set<string> {
  const paths = new Set<string>();
  for (const entry of output.split('\0')) {
    if (entry.length > 3) {
      paths.add(entry.slice(3));
    }
  }
  return paths;
}

export function gitOps(root: string): GitOps {
  return {
    async snapshot(): Promise<GitState | undefined> {
      const prefix = await git(root, ['rev-parse', '--show-prefix']);
      if (prefix.code !== 0) {
        return undefined;
      }
      const status = await git(root, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=all']);
      if (status.code !== 0) {
        return undefined;
      }
      const head = await git(root, ['rev-parse', '--verify', '-q', 'HEAD']);
      return {
        head: head.code === 0 ? head.stdout.toString('utf8').trim() : null,
        prefix: prefix.stdout.toString('utf8').trim(),
        dirty: parseStatus(status.stdout.toString('utf8')),
      };
    },
    async show(head: string, repoPath: string): Promise<string | null> {
      const blob = await git(root, ['cat-file', 'blob', `${head}:${repoPath}`]);
      return blob.code === 0 ? blob.stdout.toString('utf8') : null;
    },
    async ignored(repoPath: string): Promise<boolean> {
      // check-ignore takes paths relative to the working directory: make it the repository root
      const top = await git(root, ['rev-parse', '--show-toplevel']);
      if (top.code !== 0) {
        return false;
      }
      const result = await git(top.stdout.toString('utf8').trim(), ['check-ignore', '-q', '--', repoPath]);
      return result.code === 0;
    },
  };
}
