// "LSP Agent: Show MCP Servers" (docs/mcp.md): agent/mcp/list in a quick pick — each server with
// its state (and error), then its tools. It asks the server to start the MCP servers first, so the
// list shows what a run would get.

import type { Logger } from './agentClient.js';
import type { Host, PickItem } from './host.js';
import { describeError, errorFacts, isMethodNotFound } from './rpc.js';

export const MCP_LIST = 'agent/mcp/list';
export const McpCommandIds = { list: 'lspAgent.mcp.list' } as const;

export interface McpTool {
  name: string;
  tool: string;
  description: string;
  readOnly: boolean;
}

export interface McpServer {
  name: string;
  transport: 'stdio' | 'http';
  state: 'stopped' | 'starting' | 'ready' | 'failed' | 'disabled';
  error?: string | null;
  trusted: boolean;
  server?: string | null;
  tools: McpTool[];
  skipped: { tool: string; reason: string }[];
}

export interface McpListResult {
  servers: McpServer[];
  discovery: boolean;
}

export interface McpRequester {
  send<T>(method: string, params?: unknown): Promise<T>;
}

const STATE_ICON: Record<McpServer['state'], string> = {
  ready: '$(pass)',
  failed: '$(error)',
  disabled: '$(circle-slash)',
  stopped: '$(circle-outline)',
  starting: '$(sync)',
};

/** One row per server (state, error), then one per tool, then one per skipped tool. */
export function mcpPicks(list: McpListResult): PickItem[] {
  const picks: PickItem[] = [];
  for (const server of list.servers) {
    const tools = `${server.tools.length} tool${server.tools.length === 1 ? '' : 's'}`;
    const row: PickItem = {
      label: `${STATE_ICON[server.state]} ${server.name}`,
      description: `${server.state} · ${server.transport}${server.trusted ? ' · trusted' : ''} · ${tools}`,
    };
    const detail = server.error ?? server.server;
    if (detail) {
      row.detail = detail;
    }
    picks.push(row);
    for (const tool of server.tools) {
      picks.push({ label: `    $(tools) ${tool.name}`, description: tool.readOnly ? 'read-only' : 'exclusive', detail: tool.description });
    }
    for (const skipped of server.skipped) {
      picks.push({ label: `    $(warning) ${skipped.tool}`, description: 'not offered', detail: skipped.reason });
    }
  }
  return picks;
}

export class McpCommands {
  constructor(
    private readonly host: Host,
    private readonly client: McpRequester,
    private readonly log: Logger,
  ) {}

  async list(): Promise<void> {
    const what = 'Show MCP Servers';
    try {
      const list = await this.client.send<McpListResult>(MCP_LIST, { start: true });
      if (list.servers.length === 0) {
        await this.host.showInfo('No MCP servers are configured ([mcp.servers.NAME] in .lsp-agent/config.toml).');
        return;
      }
      const ready = list.servers.filter((s) => s.state === 'ready').length;
      await this.host.quickPick(mcpPicks(list), {
        title: `LSP Agent: MCP servers (${ready} of ${list.servers.length} ready${list.discovery ? '; tools found on demand by tool_search' : ''})`,
        placeHolder: 'Servers and the tools the agent gets from them',
      });
    } catch (error) {
      if (isMethodNotFound(error)) {
        await this.host.showWarning(describeError(what, error));
        return;
      }
      this.log.error(`${what}: ${errorFacts(error).message}`);
      await this.host.showError(describeError(what, error));
    }
  }
}
