import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { AgentClient } from '../../src/agentClient.js';
import { MCP_LIST, McpCommands, mcpPicks } from '../../src/mcp.js';
import type { McpListResult } from '../../src/mcp.js';
import { FakeHost, FakeRpc, rpcError } from '../helpers/fakes.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

const LIST: McpListResult = {
  discovery: false,
  servers: [
    { name: 'fault', transport: 'stdio', state: 'failed', error: 'the server stopped during a call', trusted: false, tools: [], skipped: [{ tool: 'broken', reason: 'invalid schema' }] },
    {
      name: 'time', transport: 'stdio', state: 'ready', trusted: true, server: 'mcp-time 1.0', skipped: [],
      tools: [{ name: 'mcp__time__get_current_time', tool: 'get_current_time', description: 'Get the time', readOnly: true }],
    },
  ],
};

function setup(): { host: FakeHost; rpc: FakeRpc; mcp: McpCommands } {
  const rpc = new FakeRpc();
  const client = new AgentClient({ newClientID: () => 'client-1' });
  client.attach(rpc);
  const host = new FakeHost();
  return { host, rpc, mcp: new McpCommands(host, client, silent) };
}

describe('Show MCP Servers', () => {
  it('lists each server with its state and error, then its tools and skipped tools', () => {
    const picks = mcpPicks(LIST);
    assert.deepEqual(picks.map((p) => p.label), ['$(error) fault', '    $(warning) broken', '$(pass) time', '    $(tools) mcp__time__get_current_time']);
    assert.equal(picks[0]!.detail, 'the server stopped during a call');
    assert.equal(picks[2]!.description, 'ready · stdio · trusted · 1 tool');
    assert.equal(picks[3]!.description, 'read-only');
  });

  it('asks the server to start its MCP servers and shows the list', async () => {
    const { host, rpc, mcp } = setup();
    rpc.answer(MCP_LIST, LIST).answer(MCP_LIST, { servers: [], discovery: false });
    await mcp.list();
    assert.deepEqual(rpc.sent.at(-1), { method: MCP_LIST, params: { start: true } });
    assert.equal(host.picks[0]!.length, 4);
    await mcp.list();
    assert.match(host.last('info')!, /No MCP servers are configured/);
  });

  it('an older server without agent/mcp/list gets a clear warning', async () => {
    const { host, rpc, mcp } = setup();
    rpc.answer(MCP_LIST, rpcError(-32601, 'Method Not Found: agent/mcp/list'));
    await mcp.list();
    assert.match(host.last('warning')!, /Show MCP Servers/);
  });
});
