"""Steering and follow-up queue handlers: parse the protocol model, make one `Agent` call, return
the protocol model. The rules (generations, receipts, guarded queue writes) live in the core;
core refusals leave through the routes (server/rpc.py) as the documented JSON-RPC errors.
"""

from __future__ import annotations

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
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.rpc import Routes

routes = Routes()


def item_out(ls: AgentServer, item: QueueItem) -> QueueItemOut:
    """The row as the protocol shows it, `steerable` judged by this server's `limits.steer_chars`."""
    return QueueItemOut.of(item.model_dump(), ls.runtime().agent.queue.steer_chars())


def receipt_out(receipt: Receipt) -> ReceiptOut:
    return ReceiptOut.model_validate(receipt.model_dump())


def _started(started: Started | None) -> RunResult | None:
    return RunResult(session_id=started.session_id, generation=started.generation,
                     message_id=started.message_id) if started else None


def _steer_result(ls: AgentServer, result: CoreSteerResult) -> QueueSteerResult:
    receipt = receipt_out(result.receipt) if result.receipt is not None else None
    reason = RejectReason(result.reason) if result.reason is not None else None
    return QueueSteerResult(item=item_out(ls, result.item), receipt=receipt, reason=reason,
                            started=_started(result.started))


@routes.rpc(m.AGENT_STEERING, SteeringParams)
def agent_steering(ls: AgentServer, params: SteeringParams) -> SteeringResult:
    view = ls.runtime().agent.corrections.view(params.session_id)
    return SteeringResult(generation=view.generation, receipts=[receipt_out(r) for r in view.receipts])


@routes.rpc(m.AGENT_STEER, SteerParams)
async def agent_steer(ls: AgentServer, params: SteerParams) -> ReceiptOut:
    receipt = await ls.runtime().agent.corrections.steer(params.session_id, params.expected_generation,
                                                         params.client_id, params.text)
    return receipt_out(receipt)


@routes.rpc(m.AGENT_STEER_PREFIX, SteerPrefixParams)
async def agent_steer_prefix(ls: AgentServer, params: SteerPrefixParams) -> SteerPrefixResult:
    results = await ls.runtime().agent.follow_ups.steer_prefix(params.session_id)
    return SteerPrefixResult(results=[_steer_result(ls, r) for r in results])


@routes.rpc(m.AGENT_QUEUE_LIST, QueueListParams)
def queue_list(ls: AgentServer, params: QueueListParams) -> QueueListResult:
    items = ls.runtime().agent.follow_ups.items(params.session_id)
    return QueueListResult(items=[item_out(ls, i) for i in items])


@routes.rpc(m.AGENT_QUEUE_ADD, QueueAddParams)
def queue_add(ls: AgentServer, params: QueueAddParams) -> QueueAddResult:
    item, started = ls.runtime().agent.follow_ups.add(params.session_id, params.text, params.kind, params.attachments)
    return QueueAddResult(item=item_out(ls, item), started=_started(started))


@routes.rpc(m.AGENT_QUEUE_STEER, QueueTaskParams)
async def queue_steer(ls: AgentServer, params: QueueTaskParams) -> QueueSteerResult:
    return _steer_result(ls, await ls.runtime().agent.follow_ups.steer(params.task_id))


@routes.rpc(m.AGENT_QUEUE_SEND_NOW, QueueTaskParams)
def queue_send_now(ls: AgentServer, params: QueueTaskParams) -> QueueSendNowResult:
    item, started = ls.runtime().agent.follow_ups.send_now(params.task_id)
    return QueueSendNowResult(item=item_out(ls, item), started=_started(started))


@routes.rpc(m.AGENT_QUEUE_CANCEL, QueueTaskParams)
def queue_cancel(ls: AgentServer, params: QueueTaskParams) -> QueueItemResult:
    return QueueItemResult(item=item_out(ls, ls.runtime().agent.follow_ups.cancel(params.task_id)))


@routes.rpc(m.AGENT_QUEUE_EDIT, QueueEditParams)
def queue_edit(ls: AgentServer, params: QueueEditParams) -> QueueItemResult:
    item = ls.runtime().agent.follow_ups.edit(params.task_id, params.text, params.expected_updated_at)
    return QueueItemResult(item=item_out(ls, item))
