// agent/verificationChanged, checked: the server says an idle session's check went stale after its
// run finished (a hand edit, a revert in the editor, another program). Anything malformed is
// dropped (undefined), never half-applied.

import type { InvalidatedBy, Verification, VerificationChangedParams } from './protocol.js';

const STATUSES = new Set<string>(['verified', 'failed', 'not_run']);
const WRITERS = new Set<string>(['agent_tool', 'command', 'outside_process']);

export interface VerificationChange {
  sessionID: string;
  verification: Verification;
  verificationReason?: string;
  invalidatedBy?: InvalidatedBy;
}

function invalidatedBy(value: unknown): InvalidatedBy | undefined | null {
  if (value === undefined || value === null) {
    return undefined;
  }
  const raw = value as Partial<InvalidatedBy>;
  if (typeof raw !== 'object' || !Array.isArray(raw.paths) || !raw.paths.every((p) => typeof p === 'string') || typeof raw.by !== 'string' || !WRITERS.has(raw.by)) {
    return null;
  }
  const out: InvalidatedBy = { paths: raw.paths, by: raw.by };
  if (typeof raw.step === 'number') {
    out.step = raw.step;
  }
  if (typeof raw.tool === 'string') {
    out.tool = raw.tool;
  }
  return out;
}

export function verificationChange(raw: unknown): VerificationChange | undefined {
  const params = raw as Partial<VerificationChangedParams> | null;
  if (!params || typeof params !== 'object' || typeof params.sessionID !== 'string' || typeof params.verification !== 'string' || !STATUSES.has(params.verification)) {
    return undefined;
  }
  const by = invalidatedBy(params.invalidatedBy);
  if (by === null) {
    return undefined;
  }
  const change: VerificationChange = { sessionID: params.sessionID, verification: params.verification };
  if (typeof params.verificationReason === 'string' && params.verificationReason !== '') {
    change.verificationReason = params.verificationReason;
  }
  if (by) {
    change.invalidatedBy = by;
  }
  return change;
}
