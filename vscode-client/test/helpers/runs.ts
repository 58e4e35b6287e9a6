// A run that edits a file and then fails its check, shaped as the server streams it: the
// transcript's rows, diffs, failing-check view and footer are tested against it.

import type { AgentEvent, RunFinishEvent } from '../../src/protocol.js';
import { SESSION } from './events.js';

export const EDIT_GEN = 'gen-edit';

const TOKENS = { input: 10, output: 2, reasoning: 0, unknown: false, cache: { read: 0, write: 0 } };

export const FAILING_OUTPUT = [
  'verify_project: failed',
  'test: 1 failed, 3 passed',
  '  tests/test_ops.py:7: tests/test_ops.py::test_add: assert 5 == 4',
  '  output:',
  '    ____ test_add ____',
  '    def test_add():',
  '>       assert add(2, 2) == 4',
  'E       assert 5 == 4',
].join('\n');

export const FAILING_ENVELOPE = {
  status: 'failed',
  revision: null,
  clean: null,
  fingerprint: '',
  checks: [
    {
      kind: 'test',
      command: ['python', '-m', 'pytest'],
      exitCode: 1,
      signal: null,
      timedOut: false,
      outputTruncated: false,
      durationMs: 900,
      executed: true,
      counts: { passed: 3, failed: 1, errors: 0, skipped: 0 },
      failures: [{ file: 'tests/test_ops.py', line: 7, message: 'tests/test_ops.py::test_add: assert 5 == 4' }],
    },
  ],
};

export function toolUse(callID: string, tool: string, input: Record<string, unknown>, result: { output: string; ok?: boolean; errorKind?: string; metadata?: Record<string, unknown> }, step = 1): AgentEvent {
  const state: Record<string, unknown> = {
    status: result.ok === false ? 'error' : 'completed',
    input,
    output: result.output,
    elapsedMs: 12,
  };
  if (result.errorKind) {
    state.errorKind = result.errorKind;
  }
  if (result.metadata) {
    state.metadata = result.metadata;
  }
  return {
    sessionID: SESSION,
    generation: EDIT_GEN,
    type: 'tool_use',
    step,
    part: { id: `prt_${callID}`, messageID: 'msg_x', callID, tool, state },
  } as unknown as AgentEvent;
}

export function finish(overrides: Partial<RunFinishEvent> = {}): RunFinishEvent {
  return {
    sessionID: SESSION,
    generation: EDIT_GEN,
    type: 'run_finish',
    stopReason: 'final',
    verification: 'failed',
    steps: 2,
    toolCalls: 2,
    toolErrors: 1,
    tokens: TOKENS,
    filesChanged: ['calc/ops.py'],
    model: 'scripted',
    scripted: true,
    ...overrides,
  };
}

export function editAndFailingCheck(): AgentEvent[] {
  return [
    { sessionID: SESSION, generation: EDIT_GEN, type: 'step_start', step: 1, maxSteps: 40 },
    toolUse('call_edit', 'apply_patch', { path: 'calc/ops.py', old_text: '    return a - b\n', new_text: '    return a + b + 1\n' }, {
      output: 'updated calc/ops.py (1 edit)',
      metadata: { written: ['calc/ops.py'] },
    }),
    toolUse('call_check', 'verify_project', {}, { output: FAILING_OUTPUT, ok: false, errorKind: 'tool_failure', metadata: { envelope: FAILING_ENVELOPE } }, 2),
  ];
}
