// Agent events and queue rows shaped as the server sends them (taken from a real
// `lsp-agent run --json` stream; IDs shortened).

import type { AgentEvent, QueueItem } from '../../src/protocol.js';

export const SESSION = 'ses_test';
export const GEN = 'gen-1';

const base = { sessionID: SESSION, generation: GEN };

export function runEvents(generation = GEN): AgentEvent[] {
  const b = { ...base, generation };
  return [
    { ...b, type: 'step_start', step: 1, maxSteps: 40 },
    { ...b, type: 'reasoning_delta', partID: 'prt_r_stream', delta: 'Read the ' },
    { ...b, type: 'reasoning_delta', partID: 'prt_r_stream', delta: 'file first.' },
    { ...b, type: 'reasoning', part: { id: 'prt_r_final', messageID: 'msg_1', text: 'Read the file first.' } },
    {
      ...b,
      type: 'tool_start',
      step: 1,
      part: { id: 'prt_call', messageID: 'msg_1', callID: 'call_0_0', tool: 'read_file', state: { status: 'running', input: { path: 'a.txt' } } },
    },
    {
      ...b,
      type: 'tool_use',
      step: 1,
      part: {
        id: 'prt_result',
        messageID: 'msg_1',
        callID: 'call_0_0',
        tool: 'read_file',
        state: { status: 'completed', input: { path: 'a.txt' }, output: 'OK: a.txt lines 1-1 of 1\n     1\thi', elapsedMs: 3, metadata: { read: ['a.txt'] } },
      },
    },
    { ...b, type: 'step_finish', part: { id: 'prt_sf1', step: 1, reason: 'tool-calls', tokens: { input: 2478, output: 4, reasoning: 1, unknown: false, cache: { read: 0, write: 0 } } } },
    { ...b, type: 'step_start', step: 2, maxSteps: 40 },
    { ...b, type: 'text_delta', partID: 'prt_text', delta: 'All done ' },
    { ...b, type: 'text_delta', partID: 'prt_text', delta: 'here.' },
    { ...b, type: 'text', part: { id: 'prt_text', messageID: 'msg_2', text: 'All done here.' } },
    { ...b, type: 'step_finish', part: { id: 'prt_sf2', step: 2, reason: 'stop', tokens: { input: 2607, output: 3, reasoning: 0, unknown: false, cache: { read: 0, write: 0 } } } },
    {
      ...b,
      type: 'run_finish',
      stopReason: 'final',
      verification: 'not_run',
      steps: 2,
      toolCalls: 1,
      toolErrors: 0,
      tokens: { input: 5085, output: 7, reasoning: 1, unknown: false, cache: { read: 0, write: 0 } },
      filesChanged: [],
      model: 'scripted (probe)',
      scripted: true,
    },
  ];
}

let counter = 0;

export function item(overrides: Partial<QueueItem> = {}): QueueItem {
  counter += 1;
  return {
    id: `que_${counter}`,
    sessionID: SESSION,
    kind: 'follow_up',
    text: `follow-up ${counter}`,
    attachments: [],
    status: 'queued',
    position: counter,
    createdAt: 1000 + counter,
    updatedAt: 1000 + counter,
    steerable: true,
    ...overrides,
  };
}
