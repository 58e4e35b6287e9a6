"""What the compared records say of where they came from, and the warnings when they mix.

Two arms are comparable when they differ only in the arm's settings. Records made by two builds of
lsp-agent, two models, two executors or two sampling settings of the same arm are still paired by
`compare`, but a difference between the arms may then come from that mix: the report says so first.
Hosts are listed, never warned about (a cluster has many by design).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from lsp_agent.eval.records import AttemptRecord

UNKNOWN = "unknown"  # records written before provenance was recorded


def _sampling(record: AttemptRecord) -> str:
    if record.sampling is None:
        return UNKNOWN
    values = record.sampling.model_dump(mode="json")
    shown = [f"{key}={value}" for key, value in values.items() if value is not None]
    return ", ".join(shown) or "server defaults"


_FIELDS: dict[str, tuple[str, Callable[[AttemptRecord], str | None]]] = {
    "agentVersions": ("lsp-agent versions", lambda r: r.agent_version),
    # An installed package has no commit; that is a value of its own, not an unknown.
    "agentCommits": ("lsp-agent commits", lambda r: r.agent_commit or ("none" if r.agent_version else None)),
    "models": ("models", lambda r: r.model),
    "serverModels": ("server-reported models", lambda r: r.server_model),
    "executors": ("executors", lambda r: r.executor),
}


def _distinct(records: Iterable[AttemptRecord], value: Callable[[AttemptRecord], str | None]) -> list[str]:
    return sorted({value(r) or UNKNOWN for r in records})


def provenance(records: list[AttemptRecord], baseline: str, candidate: str) -> dict[str, Any]:
    out: dict[str, Any] = {key: _distinct(records, value) for key, (_, value) in _FIELDS.items()}
    out["hosts"] = _distinct(records, lambda r: r.host)
    out["sampling"] = {arm: _distinct((r for r in records if r.arm == arm), _sampling) for arm in (baseline, candidate)}
    return out


def warnings(facts: dict[str, Any]) -> list[str]:
    """One line per mix, in a fixed order."""
    found = []
    for key, (label, _) in _FIELDS.items():
        values = facts[key]
        if len(values) > 1:
            found.append(f"WARNING: these records mix {label}: {', '.join(values)}; a difference between the "
                         "arms may come from that")
    for arm, values in facts["sampling"].items():
        if len(values) > 1:
            found.append(f"WARNING: arm {arm} mixes sampling settings: {' | '.join(values)}")
    return found
