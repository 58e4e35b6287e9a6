"""Steering and follow-up queue handlers: parse the protocol model, make one `Agent` call, return
the protocol model. The rules (generations, receipts, guarded queue writes) live in the core;
core refusals leave through `answers` as the documented JSON-RPC errors.
"""

from __future__ import annotations

from typing import Any

from lsp_agent.core.agent import QueueSteerResult as CoreSteerResult
from lsp_agent.core.agent import Started
from lsp_agent.core.queue import QueueItem
from lsp_agent.core.steering import Receipt, RejectReason
from lsp_agent.protocol import methods as m
from lsp_agent.protocol.models import RunResult
from lsp_agent.protocol.steering import (
    QueueAddParams,
    QueueAddResult,
    QueueEditParams,
    QueueItemOut,
    QueueItemResult,
    QueueListParams,
    QueueListResult,
    QueueSendNowResult,
    QueueSteerResult,
    QueueTaskParams,
    ReceiptOut,
    SteeringParams,
    SteeringResult,
    SteerParams,
    SteerPrefixParams,
    SteerPrefixResult,
)
from lsp_agent.server.app import AgentServer
from lsp_agent.server.convert import parse
from lsp_agent.server.methods import answers


def item_out(item: QueueItem) -> QueueItemOut:
    return QueueItemOut.model_validate(item.model_dump())


def receipt_out(receipt: Receipt) -> ReceiptOut:
    return ReceiptOut.model_validate(receipt.model_dump())


def _started(started: Started | None) -> RunResult | None:
    return RunResult(session_id=started.session_id, generation=started.generation) if started else None


def _steer_result(result: CoreSteerResult) -> QueueSteerResult:
    receipt = receipt_out(result.receipt) if result.receipt is not None else None
    reason = RejectReason(result.reason) if result.reason is not None else None
    return QueueSteerResult(item=item_out(result.item), receipt=receipt, reason=reason,
                            started=_started(result.started))


def register_steering(server: AgentServer) -> None:
    @server.feature(m.AGENT_STEERING)
    @answers(m.AGENT_STEERING)
    def agent_steering(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(SteeringParams, raw, m.AGENT_STEERING)
        view = ls.runtime().agent.steering_view(params.session_id)
        return SteeringResult(generation=view.generation, receipts=[receipt_out(r) for r in view.receipts]).wire()

    @server.feature(m.AGENT_STEER)
    @answers(m.AGENT_STEER)
    async def agent_steer(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(SteerParams, raw, m.AGENT_STEER)
        receipt = await ls.runtime().agent.steer(params.session_id, params.expected_generation, params.client_id,
                                                 params.text)
        return receipt_out(receipt).wire()

    @server.feature(m.AGENT_STEER_PREFIX)
    @answers(m.AGENT_STEER_PREFIX)
    async def agent_steer_prefix(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(SteerPrefixParams, raw, m.AGENT_STEER_PREFIX)
        results = await ls.runtime().agent.steer_prefix(params.session_id)
        return SteerPrefixResult(results=[_steer_result(r) for r in results]).wire()

    @server.feature(m.AGENT_QUEUE_LIST)
    @answers(m.AGENT_QUEUE_LIST)
    def queue_list(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(QueueListParams, raw, m.AGENT_QUEUE_LIST)
        items = ls.runtime().agent.queue_items(params.session_id)
        return QueueListResult(items=[item_out(i) for i in items]).wire()

    @server.feature(m.AGENT_QUEUE_ADD)
    @answers(m.AGENT_QUEUE_ADD)
    def queue_add(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(QueueAddParams, raw, m.AGENT_QUEUE_ADD)
        item, started = ls.runtime().agent.queue_add(params.session_id, params.text, params.kind,
                                                     params.attachments)
        return QueueAddResult(item=item_out(item), started=_started(started)).wire()

    @server.feature(m.AGENT_QUEUE_STEER)
    @answers(m.AGENT_QUEUE_STEER)
    async def queue_steer(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(QueueTaskParams, raw, m.AGENT_QUEUE_STEER)
        return _steer_result(await ls.runtime().agent.queue_steer(params.task_id)).wire()

    @server.feature(m.AGENT_QUEUE_SEND_NOW)
    @answers(m.AGENT_QUEUE_SEND_NOW)
    def queue_send_now(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(QueueTaskParams, raw, m.AGENT_QUEUE_SEND_NOW)
        item, started = ls.runtime().agent.queue_send_now(params.task_id)
        return QueueSendNowResult(item=item_out(item), started=_started(started)).wire()

    @server.feature(m.AGENT_QUEUE_CANCEL)
    @answers(m.AGENT_QUEUE_CANCEL)
    def queue_cancel(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(QueueTaskParams, raw, m.AGENT_QUEUE_CANCEL)
        return QueueItemResult(item=item_out(ls.runtime().agent.queue_cancel(params.task_id))).wire()

    @server.feature(m.AGENT_QUEUE_EDIT)
    @answers(m.AGENT_QUEUE_EDIT)
    def queue_edit(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(QueueEditParams, raw, m.AGENT_QUEUE_EDIT)
        item = ls.runtime().agent.queue_edit(params.task_id, params.text, params.expected_updated_at)
        return QueueItemResult(item=item_out(item)).wire()
