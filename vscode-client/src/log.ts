// The "LSP Agent" output channel: the server's stderr and the language client's messages go
// here (trace lines go to "LSP Agent Trace", controlled by lspAgent.trace.server).

import * as vscode from 'vscode';

import type { Logger } from './agentClient.js';

export interface Log {
  channel: vscode.LogOutputChannel;
  traceChannel: vscode.LogOutputChannel;
  logger: Logger;
}

export function createLog(): Log {
  const channel = vscode.window.createOutputChannel('LSP Agent', { log: true });
  const traceChannel = vscode.window.createOutputChannel('LSP Agent Trace', { log: true });
  const logger: Logger = {
    info: (message) => channel.info(message),
    warn: (message) => channel.warn(message),
    error: (message) => channel.error(message),
  };
  return { channel, traceChannel, logger };
}
