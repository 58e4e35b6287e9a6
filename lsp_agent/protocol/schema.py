"""The protocol as data: JSON Schema of every custom method, notification and command, and the
Markdown reference (docs/protocol.md) rendered from the same models.

`lsp-agent schema` prints `build_schema()`; `lsp-agent schema --markdown` prints the document.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from lsp_agent.core.queue import MAX_STEER_CHARS
from lsp_agent.domain import events
from lsp_agent.protocol import (
    approval_models,
    checkpoint_models,
    context_models,
    editor_query_models,
    errors,
    mcp_models,
    methods,
    models,
    provider_models,
    skill_models,
    steering,
    trust_models,
    verification_models,
)

PROTOCOL_VERSION = 1
Kind = Literal["request", "notification", "command"]


@dataclass(frozen=True)
class MethodDoc:
    name: str
    kind: Kind
    direction: str
    params: type[BaseModel]
    result: type[BaseModel] | None
    summary: str


METHODS: tuple[MethodDoc, ...] = (
    MethodDoc(methods.AGENT_RUN, "request", "client → server", models.RunParams, models.RunResult,
              "Start a generation (a new session, or an idle existing one). Returns at once; the run streams "
              "`agent/event` notifications and `$/progress`, and ends with a `run_finish` event."),
    MethodDoc(methods.AGENT_CANCEL, "request", "client → server", models.CancelParams, models.CancelResult,
              "Cancel the session's running generation at the earliest safe point (it ends `cancelled`)."),
    MethodDoc(methods.AGENT_SESSIONS, "request", "client → server", models.SessionsParams,
              models.SessionsResult, "List the workspace's sessions, newest first. Params may be omitted."),
    MethodDoc(methods.AGENT_SESSION, "request", "client → server", models.SessionParams, models.SessionResult,
              "One session's messages and their parts, in pages (`after` = the previous page's `next`)."),
    MethodDoc(methods.AGENT_STATUS, "request", "client → server", models.StatusParams, models.StatusResult,
              "Whether a generation runs, its step, and the verification status derived from the record. "
              "Params may be omitted."),
    MethodDoc(methods.AGENT_STEERING, "request", "client → server", steering.SteeringParams,
              steering.SteeringResult,
              "The running generation (null when idle) and the session's recent steering receipts. Receipts live "
              "in server memory: after a restart, fetch the new generation and reconcile with agent/session."),
    MethodDoc(methods.AGENT_STEER, "request", "client → server", steering.SteerParams, steering.ReceiptOut,
              "Correct the running generation. Returns a receipt: `accepted` (it lands as a user message "
              "after the current step's tool results; a generation about to stop gets one more step), `applied` "
              "(with `messageID`) or `rejected` (with `reason`: `generation_not_active`, `stale_generation`, "
              "`too_long`, `too_many_pending`, `admission_rejected`, ...). Later changes of the receipt arrive "
              "as `agent/receipt`. The same clientID and text again returns the same receipt; the same clientID "
              "with other text is a conflict (-32009, `data.status` 409); a malformed clientID or empty text is "
              "InvalidParams (-32602, `data.status` 400)."),
    MethodDoc(methods.AGENT_STEER_PREFIX, "request", "client → server", steering.SteerPrefixParams,
              steering.SteerPrefixResult,
              "The editor's steer gesture with an empty composer (ctrl+s): steer the session's waiting rows in "
              "FIFO order, one at a time, and stop at the first row that cannot be steered, so later follow-ups "
              "never jump ahead of it. If no generation runs, the first row is sent now (agent/queue/sendNow) "
              "and nothing else moves."),
    MethodDoc(methods.AGENT_QUEUE_LIST, "request", "client → server", steering.QueueListParams,
              steering.QueueListResult,
              "The session's follow-up queue: waiting rows in run order, then the history (sent and cancelled "
              "rows, including steered ones with their audit fields)."),
    MethodDoc(methods.AGENT_QUEUE_ADD, "request", "client → server", steering.QueueAddParams,
              steering.QueueAddResult,
              "Queue a message typed while a generation runs (persisted, FIFO per session). When the generation "
              "ends `final` or `step_limit` the next queued row starts the next generation; after a cancel or "
              "an error waiting rows become `paused` and wait for the user. On an idle session with nothing "
              "queued ahead the message starts at once (`started`)."),
    MethodDoc(methods.AGENT_QUEUE_STEER, "request", "client → server", steering.QueueTaskParams,
              steering.QueueSteerResult,
              "Admit a queued follow-up into the running generation (delivered like agent/steer) and cancel the "
              "row in the same operation, recording `steeredInto` and `steeredAt`. Idle session: the row is left "
              "intact, `receipt` is null and `reason` is `generation_not_active`. Only text follow-ups of at most "
              f"`limits.steer_chars` (default {MAX_STEER_CHARS:,}) characters can be steered (else InvalidParams, "
              "kind `not_steerable`); a row "
              "changed or steered by someone else is a conflict (-32009). If the correction is later rejected the "
              "row goes back to the queue (`paused` after an interrupt)."),
    MethodDoc(methods.AGENT_QUEUE_SEND_NOW, "request", "client → server", steering.QueueTaskParams,
              steering.QueueSendNowResult,
              "Move a waiting row to the front of the queue (and un-pause it). It still waits for the running "
              "generation to end; on an idle session it starts at once (`started`)."),
    MethodDoc(methods.AGENT_QUEUE_CANCEL, "request", "client → server", steering.QueueTaskParams,
              steering.QueueItemResult,
              "Cancel a waiting row; it stays in the history as `cancelled`. A row that is no longer waiting is "
              "a conflict (-32009)."),
    MethodDoc(methods.AGENT_QUEUE_EDIT, "request", "client → server", steering.QueueEditParams,
              steering.QueueItemResult,
              "Change a waiting row's text, if it has not changed since `expectedUpdatedAt` (else a conflict, "
              "-32009: refresh and retry)."),
    MethodDoc(methods.AGENT_EVENT, "notification", "server → client", models.EventParams, None,
              "Every core event of a generation, in order (deltas coalesced per part, ~30 ms). `event` has "
              "the same shape as a line of `lsp-agent run --json`."),
    MethodDoc(methods.AGENT_RECEIPT, "notification", "server → client", steering.ReceiptParams, None,
              "A steering receipt was created or changed (`accepted` → `applied` with `messageID`, or "
              "`rejected` with `reason`), so editors need not poll agent/steering."),
    MethodDoc(methods.AGENT_QUEUE_CHANGED, "notification", "server → client", steering.QueueChangedParams, None,
              "A session's follow-up queue changed; `items` is the whole queue as agent/queue/list returns it."),
    MethodDoc(methods.AGENT_SAVE_DOCUMENTS, "request", "server → client", models.SaveDocumentsParams,
              models.SaveDocumentsResult,
              "Sent before verify_project runs: save these open documents the agent edited. If the client "
              "does not implement it, or a save fails, verify_project reports `error: unsaved edits` instead "
              "of testing stale files."),
    MethodDoc(*approval_models.METHOD_DOC),  # approval policy
    MethodDoc(*editor_query_models.METHOD_DOC),  # the editor's language intelligence as tools
    *(MethodDoc(*doc) for doc in trust_models.METHOD_DOCS),  # workspace trust
    *(MethodDoc(*doc) for doc in provider_models.METHOD_DOCS),  # models, keys, modes
    MethodDoc(*verification_models.METHOD_DOC),  # a check made stale after its run
    MethodDoc(methods.COMMAND_FIX_DIAGNOSTIC, "command", "client → server (workspace/executeCommand)",
              models.FixDiagnosticArgs, models.RunResult,
              "Offered by the code action \"Ask the agent to fix this\" on `lsp-agent` diagnostics; starts "
              "`agent/run` with the failure, file and line in the prompt. `arguments` is `[FixDiagnosticArgs]`."),
    MethodDoc(context_models.AGENT_COMPACT, "request", "client → server", context_models.CompactParams,
              context_models.CompactResult,
              "Compact a session's older history now: the model summarises it (the six items of a summary, "
              "each with source pointers), the harness checks the summary against every constraint, failed "
              "check and failed attempt it replaces and puts back what is missing; the originals stay in the "
              "store. A running session compacts before its next model request."),
    MethodDoc(context_models.AGENT_HANDOFF, "request", "client → server", context_models.HandoffParams,
              context_models.HandoffResult,
              "Restart an idle session in a fresh context: a new session (its parent is the old one) seeded "
              "with a checked handoff note of the same six items, and a generation running in it."),
    MethodDoc(checkpoint_models.AGENT_CHECKPOINTS, "request", "client → server", checkpoint_models.CheckpointsParams,
              checkpoint_models.CheckpointsResult,
              "The session's checkpoints, oldest first: the workspace recorded right before (and after) every "
              "step that may write (edits, commands, verify_project, MCP tools that are not read-only)."),
    MethodDoc(checkpoint_models.AGENT_REWIND, "request", "client → server", checkpoint_models.RewindParams,
              checkpoint_models.RewindResult,
              "Take the session back to just before a message's effects (a user message: before the run it "
              "started): `code` restores the files (open buffers through a versioned edit the user can undo, "
              "others on disk, atomically, journalled), `conversation` forks the session before the message "
              "and makes the fork current, `both` does both. `dryRun` returns the diff only. Files changed "
              "outside the agent since are `conflicts`, kept unless `confirm`. The rewind is itself "
              "checkpointed: `undo` names the checkpoint to rewind to. Refused while the session runs "
              "(`busy`); an unknown message or checkpoint is `unknown_message`; a checkpoint retention folded "
              "is `checkpoint_folded`."),
    *(MethodDoc(*doc) for doc in skill_models.METHOD_DOCS),
    MethodDoc(mcp_models.AGENT_MCP_LIST, "request", "client → server", mcp_models.McpListParams,
              mcp_models.McpListResult,
              "The configured MCP servers (docs/mcp.md): transport, state (`stopped` until a session needs "
              "them, `failed` with the error when one could not start or died), trust, the tools the agent "
              "gets from each (`mcp__<server>__<tool>`, read-only or exclusive) and the tools skipped, with "
              "why. `start: true` starts the servers not started yet first."),
)


def _schema(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True, mode=mode)


def build_schema() -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for doc in METHODS:
        # What the server reads is described as validated; what it writes as serialized.
        reads = doc.direction.startswith("client")
        entry: dict[str, Any] = {
            "kind": doc.kind,
            "direction": doc.direction,
            "description": doc.summary,
            "params": _schema(doc.params, "validation" if reads else "serialization"),
        }
        if doc.result is not None:
            entry["result"] = _schema(doc.result, "serialization" if reads else "validation")
        entries[doc.name] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "lsp-agent protocol",
        "version": PROTOCOL_VERSION,
        "methods": entries,
        "errorData": _schema(models.ErrorData, "serialization"),
        "errors": errors.describe_codes(),
    }


def schema_json() -> str:
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


# --- Markdown ---------------------------------------------------------------------------------


def _type_of(prop: dict[str, Any], defs: dict[str, Any] | None = None) -> str:
    if "$ref" in prop:
        name = str(prop["$ref"]).rsplit("/", 1)[-1]
        target = (defs or {}).get(name) or {}
        # An enum reads better as its values than as a name the reader has to look up.
        return _type_of(target) if "enum" in target else name
    if "const" in prop:
        return json.dumps(prop["const"])
    if "enum" in prop:
        return " \\| ".join(json.dumps(v) for v in prop["enum"])
    if "anyOf" in prop or "oneOf" in prop:
        options = [_type_of(p, defs) for p in prop.get("anyOf") or prop.get("oneOf") or []]
        return " \\| ".join(dict.fromkeys(options))
    kind = prop.get("type")
    if kind == "array":
        return f"{_type_of(prop.get('items') or {}, defs)}[]"
    if kind == "object":
        extra = prop.get("additionalProperties")
        return f"object<{_type_of(extra, defs)}>" if isinstance(extra, dict) and extra else "object"
    return str(kind or "any")


def _limits(prop: dict[str, Any]) -> str:
    names = {"minLength": "min length", "maxLength": "max length", "minimum": "≥", "maximum": "≤"}
    found = []
    for key, label in names.items():
        for option in [prop, *(prop.get("anyOf") or [])]:
            if key in option:
                found.append(f"{label} {option[key]}")
    if "pattern" in prop:
        found.append(f"pattern `{prop['pattern']}`")
    if "default" in prop and prop["default"] is not None:
        found.append(f"default {json.dumps(prop['default'])}")
    return "; ".join(found)


def _fields_table(schema: dict[str, Any]) -> list[str]:
    props: dict[str, Any] = schema.get("properties") or {}
    if not props:
        return ["(no fields)"]
    required = set(schema.get("required") or [])
    defs: dict[str, Any] = schema.get("$defs") or {}
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    for name, prop in props.items():
        text = " ".join(str(prop.get("description") or "").split())
        limits = _limits(prop)
        if limits:
            text = f"{text} ({limits})" if text else limits
        cell = text.replace("|", "\\|")
        rows.append(f"| `{name}` | {_type_of(prop, defs)} | {'yes' if name in required else 'no'} | {cell} |")
    return rows


def _model_section(title: str, model: type[BaseModel], mode: Literal["validation", "serialization"]) -> list[str]:
    schema = _schema(model, mode)
    lines = [f"**{title}** `{model.__name__}`", ""]
    doc = " ".join((model.__doc__ or "").split())
    if doc and title != "Params":
        lines += [doc, ""]
    return [*lines, *_fields_table(schema), ""]


def _nested_models() -> list[type[BaseModel]]:
    return [models.SessionInfo, models.MessageOut, models.TextPartOut, models.ReasoningPartOut,
            models.ToolCallPartOut, models.ToolResultPartOut, models.SaveFailure, steering.ReceiptOut,
            steering.QueueItemOut, steering.QueueSteerResult, context_models.RepairedItem,
            *skill_models.NESTED_MODELS, *mcp_models.NESTED_MODELS, checkpoint_models.CheckpointOut]


def _event_models() -> list[type[BaseModel]]:
    union = typing.get_args(events.Event)[0]
    return list(typing.get_args(union))


def render_markdown() -> str:
    out = [
        "# lsp-agent protocol",
        "",
        "<!-- Generated by `lsp-agent schema --markdown` from lsp_agent/protocol/. Do not edit by hand;",
        "     tests/unit/test_protocol_docs.py fails when this file is out of date. -->",
        "",
        "The server speaks LSP over stdio (`lsp-agent serve`; `--tcp HOST:PORT` for debugging) and adds the",
        "custom methods below. Field names are camelCase, IDs end in `ID` (`sessionID`). Params are strict:",
        "a wrong type, an unknown or a missing field is answered with InvalidParams naming the field.",
        f"Protocol version {PROTOCOL_VERSION}; the JSON Schema of everything here is printed by `lsp-agent schema`.",
        "",
        "Settings: `initializationOptions` take the keys of `.lsp-agent/config.toml` (`model`, `providers`,",
        "`maxSteps`, `limits`, `tools`, `experimental`, `compaction`, `script`), merged over the workspace",
        "configuration;",
        f"`workspace/didChangeConfiguration` with a `{methods.CONFIG_SECTION}` section (or the client's",
        f"`workspace/configuration` for `{methods.CONFIG_SECTION}`) changes them for runs started afterwards.",
        "Invalid values fall back to the defaults and the user is told once (`window/showMessage`).",
        "Two `initializationOptions` keys are facts, not settings: `editorTrusted` (`false`: the editor distrusts",
        "the folder) and `clientVersion` (the editor extension's version; a server of another version warns",
        "once with `window/showMessage`, naming both versions and the fix).",
        "",
        "| method | kind | direction |",
        "|---|---|---|",
    ]
    out += [f"| [`{d.name}`](#{d.name.replace('/', '').replace('.', '').lower()}) | {d.kind} | {d.direction} |"
            for d in METHODS]
    out.append("")
    for doc in METHODS:
        reads = doc.direction.startswith("client")
        out += [f"## {doc.name}", "", f"*{doc.kind}, {doc.direction}.* {doc.summary}", ""]
        out += _model_section("Params", doc.params, "validation" if reads else "serialization")
        if doc.result is not None:
            out += _model_section("Result", doc.result, "serialization" if reads else "validation")
    out += ["## Nested types", ""]
    for model in _nested_models():
        out += [f"### {model.__name__}", "", *_fields_table(_schema(model, "serialization")), ""]
    out += ["## Events", "",
            "`agent/event` carries one of these in `event`, told apart by `type`. `text_delta`,",
            "`reasoning_delta` and `tool_start` are partial (the headless `--json` stream skips them).", ""]
    for model in _event_models():
        event_type = model.model_fields["type"].default
        out += [f"### {event_type}", "", *_fields_table(_schema(model, "serialization")), ""]
    out += ["## Errors", "",
            "Errors are JSON-RPC errors whose `data` is `{kind, status, field?, owner?}`:", "",
            *_fields_table(_schema(models.ErrorData, "serialization")), "",
            "| code | name | status | kinds | meaning |", "|---|---|---|---|---|"]
    for code in errors.CODES:
        out.append(f"| {code.code} | {code.name} | {code.status} | {', '.join(code.kinds)} | {code.meaning} |")
    out += ["", "Unknown methods get `-32601` (MethodNotFound) from the JSON-RPC layer; the server keeps serving.",
            ""]
    out += ["## Edits, saving and diagnostics", "",
            "- Every change is a `workspace/applyEdit` with `documentChanges` when the client supports it: a",
            "  `TextDocumentEdit` per open document, versioned with the document's version, with the patch's",
            "  ranges (never a whole-file replacement). RenameFile/DeleteFile of an open document are sent",
            "  when the client lists them in `workspace.workspaceEdit.resourceOperations`.",
            "- Files that are not open in the editor, and new files, are written by the server itself",
            "  (atomic writes), so the server never has to guess what an unopened editor buffer holds.",
            "- `applied: false` from the client, or a document version that moved, fails the edit; the",
            "  model is told to re-read. The user's unsaved text is never overwritten.",
            "- Before `verify_project` runs the server sends `agent/saveDocuments` for the open documents it",
            "  edited; without a successful answer verification reports `error: unsaved edits`.",
            "- A client without `workspace.applyEdit` gets every edit written to disk by the server.",
            f"- Failures of a verify check become Diagnostics (source `{methods.DIAGNOSTIC_SOURCE}`, severity",
            "  Error, code = the check kind) on the failing file; a later passing check of that kind clears",
            f"  them. The code action \"Ask the agent to fix this\" runs `{methods.COMMAND_FIX_DIAGNOSTIC}`.",
            ""]
    out += ["## Editor queries", "",
            "- A client that can answer questions about the code from its own language servers declares the",
            "  kinds in `initialize`: `capabilities.experimental.lspAgent.editorQueries` = a list of",
            f"  {', '.join(f'`{k}`' for k in typing.get_args(editor_query_models.EditorQueryKind))}.",
            "- Each declared kind (unless switched off in `editorQueries`) becomes a tool, listed after the other",
            "  tools in that fixed order for the whole session: `find_definition`, `find_references`, `hover`,",
            "  `document_symbols`, `workspace_symbols`, `editor_diagnostics`; `typeDefinition`, `implementation`",
            "  and `callHierarchy` share `find_implementations`. A client that declares nothing gets none.",
            "- The tools send `agent/editorQuery`; answer with the editor's LSP result as it is (positions in",
            "  UTF-16, the encoding this server negotiates). Error kinds for `data.kind`: "
            f"{', '.join(f'`{k}`' for k in editor_query_models.EDITOR_QUERY_ERROR_KINDS)}.",
            "- After an edit the server asks `diagnostics` for the edited files (before, then until the answer",
            "  settles) and appends the new errors to the edit's result; verification is never affected.",
            ""]
    return "\n".join(out)
