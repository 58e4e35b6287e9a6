// The lsp-agent wire protocol as the client sees it (docs/protocol.md is the reference; it is
// generated from lsp_agent/protocol/). Field names are camelCase and IDs end in `ID`.
// Only types and constants live here: no behaviour, no `vscode`.

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
} as const;

export const Notifications = {
  event: 'agent/event',
  queueChanged: 'agent/queueChanged',
  receipt: 'agent/receipt',
  skillChanged: 'agent/skill/changed',
} as const;

/** Requests the server sends to the client. */
export const ServerRequests = {
  saveDocuments: 'agent/saveDocuments',
} as const;

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

/** The server refuses corrections longer than this (SPEC 3, 4). */
export const MAX_STEER_CHARS = 16_000;
/** The server refuses prompts longer than this. */
export const MAX_PROMPT_CHARS = 200_000;

export type Verification = 'verified' | 'failed' | 'not_run';
export type StopReason = 'final' | 'step_limit' | 'cancelled' | 'error' | 'loop' | 'handoff';

export interface Tokens {
  input: number;
  output: number;
  reasoning: number;
  cache?: { read?: number; write?: number };
}

export interface ErrorInfo {
  kind: string;
  message: string;
  status?: number;
}

export interface RunParams {
  prompt: string;
  sessionID?: string;
  model?: string;
  maxSteps?: number;
  workDoneToken?: string | number;
}

export interface RunResult {
  sessionID: string;
  generation: string;
}

export interface CancelResult {
  cancelled: boolean;
  generation?: string | null;
}

export interface StatusResult {
  sessionID?: string | null;
  state: 'idle' | 'running';
  generation?: string | null;
  verification: Verification;
  step: number;
  maxSteps?: number | null;
}

// --- events (agent/event) ------------------------------------------------------------------------

interface EventBase {
  sessionID: string;
  generation: string;
}

export interface TextPartInfo {
  id: string;
  messageID: string;
  text: string;
}

export interface ToolState {
  status: 'running' | 'completed' | 'error';
  input: Record<string, unknown> | string;
  output?: string | null;
  errorKind?: string | null;
  elapsedMs?: number | null;
  metadata?: Record<string, unknown> | null;
}

export interface ToolPartInfo {
  id: string;
  messageID: string;
  callID: string;
  tool: string;
  state: ToolState;
}

export interface StepStartEvent extends EventBase { type: 'step_start'; step: number; maxSteps: number }
export interface TextDeltaEvent extends EventBase { type: 'text_delta'; partID: string; delta: string }
export interface ReasoningDeltaEvent extends EventBase { type: 'reasoning_delta'; partID: string; delta: string }
export interface TextEvent extends EventBase { type: 'text'; part: TextPartInfo }
export interface ReasoningEvent extends EventBase { type: 'reasoning'; part: TextPartInfo }
export interface ToolStartEvent extends EventBase { type: 'tool_start'; step: number; part: ToolPartInfo }
export interface ToolUseEvent extends EventBase { type: 'tool_use'; step: number; part: ToolPartInfo }
export interface StepFinishEvent extends EventBase {
  type: 'step_finish';
  part: { id: string; step: number; reason: 'tool-calls' | 'stop'; tokens: Tokens };
}
export interface ErrorEvent extends EventBase { type: 'error'; error: ErrorInfo }
export interface NoticeEvent extends EventBase {
  type: 'notice';
  kind: string;
  message: string;
  data?: Record<string, unknown> | null;
}
export interface RunFinishEvent extends EventBase {
  type: 'run_finish';
  stopReason: StopReason;
  verification: Verification;
  verificationPartID?: string | null;
  /** The verify_project result the status was derived from; a skill proposal's `evidence`, verbatim. */
  verificationCitation?: { sessionID: string; messageID: string; partID: string } | null;
  steps: number;
  toolCalls: number;
  toolErrors: number;
  tokens: Tokens;
  filesChanged: string[];
  model: string;
  scripted: boolean;
  error?: ErrorInfo | null;
  handoffTo?: string | null;
  previousSessionIDs?: string[] | null;
}

export type AgentEvent =
  | StepStartEvent
  | TextDeltaEvent
  | ReasoningDeltaEvent
  | TextEvent
  | ReasoningEvent
  | ToolStartEvent
  | ToolUseEvent
  | StepFinishEvent
  | ErrorEvent
  | NoticeEvent
  | RunFinishEvent;

export interface EventParams {
  sessionID: string;
  generation: string;
  event: AgentEvent;
}

// --- steering and the queue ------------------------------------------------------------------------

export type ReceiptStatus = 'accepted' | 'applied' | 'rejected';

export interface Receipt {
  status: ReceiptStatus;
  sessionID?: string;
  generation: string | null;
  clientID: string;
  messageID?: string | null;
  reason?: string | null;
  detail?: string | null;
}

export interface SteerParams {
  sessionID: string;
  expectedGeneration: string;
  clientID: string;
  text: string;
}

export interface SteeringView {
  generation: string | null;
  receipts: Receipt[];
}

export type QueueStatus = 'queued' | 'paused' | 'sent' | 'cancelled' | 'failed';

export interface QueueItem {
  id: string;
  sessionID: string;
  kind: string;
  text: string;
  attachments: unknown[];
  status: QueueStatus;
  position: number;
  createdAt: number;
  updatedAt: number;
  sentAt?: number | null;
  messageID?: string | null;
  steeredInto?: string | null;
  steeredAt?: number | null;
  steeredAppliedAt?: number | null;
  cancelledAt?: number | null;
  error?: string | null;
}

export interface QueueSteerResult {
  item: QueueItem;
  receipt: Receipt | null;
  reason?: string | null;
  /** set when the row started a generation at once (nothing was running) */
  started?: RunResult | null;
}

export interface QueueChangedParams {
  sessionID: string;
  items: QueueItem[];
}

export interface ReceiptParams {
  sessionID: string;
  receipt: Receipt;
}

// --- agent/saveDocuments (server → client) -------------------------------------------------------

export interface SaveDocumentsParams {
  uris: string[];
}

export interface SaveDocumentsResult {
  saved: string[];
  failed: { uri: string; reason: string }[];
}

// --- skill candidates (docs/skills.md; lsp_agent/protocol/skill_models.py) ----------------------

export const SkillMethods = {
  propose: 'agent/skill/propose',
  show: 'agent/skill/show',
  validate: 'agent/skill/validate',
  promote: 'agent/skill/promote',
  retire: 'agent/skill/retire',
  list: 'agent/skill/list',
} as const;

/** Server commands, run with `workspace/executeCommand` and `arguments: [params]`. */
export const SkillServerCommands = {
  draft: 'lsp-agent.skill.draft',
  propose: 'lsp-agent.skill.propose',
  validate: 'lsp-agent.skill.validate',
  promote: 'lsp-agent.skill.promote',
} as const;

export const EXECUTE_COMMAND = 'workspace/executeCommand';

export type SkillState = 'pending' | 'active' | 'retiring' | 'retired';

export interface SkillCandidate {
  name: string;
  state: SkillState;
  validated: boolean;
  description: string;
  applicability?: string;
  skillPath?: string | null;
}

export interface SkillInfo {
  name: string;
  description: string;
  path: string;
}

/** A refused operation is `ok: false` with the `rule` that failed, not a JSON-RPC error. */
export interface SkillResult {
  ok: boolean;
  rule?: string | null;
  message: string;
  changed: boolean;
  candidate?: SkillCandidate | null;
  path?: string | null;
  uri?: string | null;
}

export interface SkillListResult {
  candidates: SkillCandidate[];
  skills: SkillInfo[];
}
