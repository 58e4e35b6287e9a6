// The lsp-agent wire protocol as the client sees it: method names and the client's names for the
// generated wire types (src/protocol.gen.ts, from `lsp-agent schema`). Field names are camelCase
// and IDs end in `ID`. Only types and constants live here: no behaviour, no `vscode`; the answers
// are read by src/wire.ts, which accepts exactly the shapes declared here.

import type * as gen from './protocol.gen.js';
import type { MethodName } from './protocol.gen.js';

export const Methods = {
  run: 'agent/run',
  cancel: 'agent/cancel',
  status: 'agent/status',
  sessions: 'agent/sessions',
  session: 'agent/session',
  steering: 'agent/steering',
  steer: 'agent/steer',
  steerPrefix: 'agent/steerPrefix',
  queueList: 'agent/queue/list',
  queueAdd: 'agent/queue/add',
  queueSteer: 'agent/queue/steer',
  queueSendNow: 'agent/queue/sendNow',
  queueCancel: 'agent/queue/cancel',
  queueEdit: 'agent/queue/edit',
  compact: 'agent/compact',
  checkpoints: 'agent/checkpoints',
  rewind: 'agent/rewind',
} as const satisfies Record<string, MethodName>;

export const Notifications = {
  event: 'agent/event',
  queueChanged: 'agent/queueChanged',
  receipt: 'agent/receipt',
  skillChanged: 'agent/skill/changed',
  verificationChanged: 'agent/verificationChanged',
} as const satisfies Record<string, MethodName>;

/** Requests the server sends to the client. */
export const ServerRequests = {
  saveDocuments: 'agent/saveDocuments',
} as const satisfies Record<string, MethodName>;

/** The `workspace/configuration` section and the VS Code settings prefix. */
export const CONFIG_SECTION = 'lspAgent';

/** JSON-RPC error codes of the agent/* methods (docs/protocol.md, "Errors"). */
export const ErrorCodes = {
  methodNotFound: -32601,
  invalidParams: -32602,
  notFound: -32004,
  conflict: -32009,
  unavailable: -32010,
  internal: -32603,
} as const;

/** The server refuses corrections (and steered follow-ups) longer than this; the client trims selections to it. */
export const MAX_STEER_CHARS = 16_000;
/** The server refuses prompts longer than this. */
export const MAX_PROMPT_CHARS = 200_000;

// --- the wire types: generated from the server's models (src/protocol.gen.ts) ---------------------
// The client's names for them; a model change on the server shows up here as a type error.

export type Verification = gen.VerificationStatus;
export type VerificationChangedParams = gen.VerificationChangedParams;
export type StopReason = gen.StopReason;
export type Tokens = gen.Tokens;
export type ErrorInfo = gen.ErrorInfo;
export type RunParams = gen.RunParams;
export type RunResult = gen.RunResult;
export type FixDiagnosticArgs = gen.FixDiagnosticArgs;
export type CancelResult = gen.CancelResult;
export type StatusResult = gen.StatusResult;
export type TextPartInfo = gen.TextPartInfo;
export type ToolState = gen.ToolState;
export type ToolPartInfo = gen.ToolPartInfo;
export type StepStartEvent = gen.StepStart;
export type TextDeltaEvent = gen.TextDeltaEvent;
export type ReasoningDeltaEvent = gen.ReasoningDeltaEvent;
export type TextEvent = gen.TextEvent;
export type ReasoningEvent = gen.ReasoningEvent;
export type ToolStartEvent = gen.ToolStart;
export type ToolUseEvent = gen.ToolUse;
export type StepFinishEvent = gen.StepFinish;
export type ErrorEvent = gen.ErrorEvent;
export type NoticeEvent = gen.NoticeEvent;
export type RunFinishEvent = gen.RunFinish;
export type InvalidatedBy = gen.InvalidatedBy;
export type AgentEvent = gen.EventParams['event'];
export type EventParams = gen.EventParams;
export type ReceiptStatus = gen.ReceiptStatus;
export type Receipt = gen.ReceiptOut;
/** A receipt as the transcript shows it: the server's, or the one the client writes when the
 *  request itself failed (reason `error`). */
export interface ReceiptView {
  status: ReceiptStatus;
  clientID: string;
  generation?: string | null;
  messageID?: string | null;
  reason?: string | null;
  detail?: string | null;
}
export type SteerParams = gen.SteerParams;
export type SteeringView = gen.SteeringResult;
export type QueueStatus = gen.QueueStatus;
/** A queued row; `steerable`/`steerBlocker` are the server's verdict (never re-derived here). */
export type QueueItem = gen.QueueItemOut;
export type QueueSteerResult = gen.QueueSteerResult;
export type QueueChangedParams = gen.QueueChangedParams;
export type ReceiptParams = gen.ReceiptParams;
export type SaveDocumentsParams = gen.SaveDocumentsParams;
export type SaveDocumentsResult = gen.SaveDocumentsResult;
export type SessionInfo = gen.SessionInfo;
export type SessionsResult = gen.SessionsResult;
export type SessionResult = gen.SessionResult;
export type MessageOut = gen.MessageOut;
export type CheckpointOut = gen.CheckpointOut;
export type RewindParams = gen.RewindParams;
export type RewindResult = gen.RewindResult;
export type SkillState = gen.State;
export type SkillCandidate = gen.CandidateOut;
export type SkillInfo = gen.SkillOut;
export type SkillResult = gen.SkillResult;
export type SkillListResult = gen.SkillListResult;

// --- skill candidates (docs/skills.md; lsp_agent/protocol/skill_models.py) ----------------------

export const SkillMethods = {
  propose: 'agent/skill/propose',
  show: 'agent/skill/show',
  validate: 'agent/skill/validate',
  promote: 'agent/skill/promote',
  retire: 'agent/skill/retire',
  list: 'agent/skill/list',
} as const satisfies Record<string, MethodName>;

/** Server commands, run with `workspace/executeCommand` and `arguments: [params]`. */
export const SkillServerCommands = {
  draft: 'lsp-agent.skill.draft',
  propose: 'lsp-agent.skill.propose',
  validate: 'lsp-agent.skill.validate',
  promote: 'lsp-agent.skill.promote',
} as const satisfies Record<string, MethodName>;

export const EXECUTE_COMMAND = 'workspace/executeCommand';
