"""Which check stands after a rewind: a check is evidence only over the exact tree it ran on.

The tree a `verify_project` step ran on is the one its after-checkpoint records (its artifacts
included; a source it changed already makes the check stale in the history). After a rewind the
files are compared with those trees: code alone keeps the session's history, so the latest check
over exactly the restored tree stands again if it passed; code and conversation make a fork whose
history ends at the target, so the fork's own standing check holds only if the files are exactly
the ones it saw. Anything else leaves the verification stale, as any outside change would.
"""

from __future__ import annotations

import hashlib

from lsp_agent.checkpoints.chain import Entry, Record, Tree, content_key, replay, tree_changes
from lsp_agent.core.session_fork import prefix_before
from lsp_agent.domain.events import VerificationStatus
from lsp_agent.domain.history import Message, ToolResultPart
from lsp_agent.domain.verification import derive

VERIFY_TOOL = "verify_project"
_MODULUS = 1 << 256


def _entry_hash(path: str, entry: Entry | None) -> int:
    key = content_key(entry) if entry is not None else None
    if key is None:
        return 0
    return int.from_bytes(hashlib.sha256(f"{path}\0{key[0]}\0{key[1]}\0{key[2]}".encode()).digest(), "big")


def tree_digest(tree: Tree) -> int:
    """An order-free digest of a tree (the sum of its entries' hashes), so the chain's deltas update
    it path by path instead of hashing every file at every check."""
    return sum(_entry_hash(path, entry) for path, entry in tree.items()) % _MODULUS


def _checks(messages: list[Message]) -> list[tuple[int, str, str]]:
    """(index of the message holding the result, check part id, the calling assistant message id)."""
    caller: dict[str, str] = {}
    out: list[tuple[int, str, str]] = []
    for index, message in enumerate(messages):
        for call in message.tool_calls():
            caller[call.call_id] = message.id
        for part in message.parts:
            if isinstance(part, ToolResultPart) and isinstance(part.metadata.get("envelope"), dict) \
                    and part.call_id in caller:
                out.append((index, part.id, caller[part.call_id]))
    return out


def _check_digests(records: list[Record], session: str, wanted: set[str]) -> dict[str, int | None]:
    """The tree digest right after each wanted message's verify step; None where it is not known
    exactly (two checks in one message). Retention keeps a kept record's tree exact; a check's own
    record folded into a later one is no longer found (and so not known)."""
    tree: Tree = {}
    digest = 0
    out: dict[str, int | None] = {}
    for record in records:
        for path, entry in record.changes.items():
            digest = (digest - _entry_hash(path, tree.get(path)) + _entry_hash(path, entry)) % _MODULUS
            if entry is None:
                tree.pop(path, None)
            else:
                tree[path] = entry
        if _is_check(record, session, wanted):
            out[record.message] = None if record.message in out else digest
    return out


def _tree_at_check(records: list[Record], session: str, caller: str) -> Tree | None:
    """The tree right after message `caller`'s verify step, if exactly known."""
    found = [n for n, r in enumerate(records) if _is_check(r, session, {caller})]
    if len(found) != 1:
        return None
    return replay(records[:found[0] + 1])


def _is_check(record: Record, session: str, wanted: set[str]) -> bool:
    return record.session == session and record.message in wanted and record.tool == VERIFY_TOOL \
        and record.phase == "after"


def _standing(messages: list[Message]) -> str | None:
    """The part id of the check this history counts as passing now (None: not verified)."""
    found = derive(messages)
    if found.status is VerificationStatus.VERIFIED and found.invalidated_by is None:
        return found.part_id
    return None


def after_code_rewind(messages: list[Message], records: list[Record], session: str, now: Tree) -> str | None:
    """The session's latest check over exactly the tree `now`, if the history counts it as passed."""
    checks = _checks(messages)
    digests = _check_digests(records, session, {caller for _, _, caller in checks})
    current = tree_digest(now)
    for index, part_id, caller in reversed(checks):
        if digests.get(caller) != current:
            continue
        return part_id if _standing(messages[:index + 1]) == part_id else None
    return None


def after_fork(messages: list[Message], at: str, records: list[Record], session: str,
               now: Tree) -> list[str] | None:
    """For a fork at `at`: the paths where the files differ from what its standing check saw
    (None: no check stands in the fork, or the check's tree is not known exactly)."""
    prefix = prefix_before(messages, at)
    standing = _standing(prefix)
    if standing is None:
        return None
    caller = next((c for _, part_id, c in _checks(prefix) if part_id == standing), None)
    tree = _tree_at_check(records, session, caller) if caller is not None else None
    return None if tree is None else tree_changes(tree, now)
