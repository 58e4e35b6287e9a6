"""The skills' half of the sqlite store, against a real store file: candidate records kept per
workspace, guarded writes that refuse a lost race, lock rows, and the two reads of the record the
evidence rules make."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.skill_records import Candidate, Evidence, State
from lsp_agent.store.db import Store

WS, OTHER_WS = "/work/a", "/work/b"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "state" / "store.db")
    yield opened
    opened.close()


def candidate(name: str, state: State = State.PENDING, description: str = "Run the tests") -> Candidate:
    evidence = Evidence(session_id="ses_1", message_id="msg_1", part_id="prt_1", digest="d" * 64,
                        revision="r" * 40, fingerprint="f" * 64)
    return Candidate(name=name, state=state, description=description, applicability="always",
                     procedure="1. run", source=evidence, created_at=1, updated_at=1)


def reopened(store: Store) -> Store:
    """A second connection to the same file (as another process has)."""
    return Store(store.path)


def test_candidates_are_kept_per_workspace_and_listed_by_name(store: Store) -> None:
    for name in ("zeta", "alpha"):
        assert store.insert_skill_candidate(WS, candidate(name)) is None
    assert store.insert_skill_candidate(OTHER_WS, candidate("other")) is None

    other = reopened(store)
    try:
        assert [c.name for c in other.skill_candidates(WS)] == ["alpha", "zeta"]
        assert other.skill_candidate(WS, "alpha") == candidate("alpha")
        assert other.skill_candidate(WS, "other") is None
        assert [c.name for c in other.skill_candidates(OTHER_WS)] == ["other"]
    finally:
        other.close()


def test_a_live_candidate_keeps_its_name_and_a_retired_one_gives_it_up(store: Store) -> None:
    store.insert_skill_candidate(WS, candidate("calc", description="first"))
    assert store.insert_skill_candidate(WS, candidate("calc", description="second")) is State.PENDING
    assert store.skill_candidate(WS, "calc").description == "first"  # type: ignore[union-attr]

    retired = candidate("calc", State.RETIRED, description="first")
    assert store.update_skill_candidate(WS, retired, (State.PENDING,))
    assert store.insert_skill_candidate(WS, candidate("calc", description="second")) is None
    assert store.skill_candidate(WS, "calc").description == "second"  # type: ignore[union-attr]


def test_an_update_writes_only_from_an_expected_state(store: Store) -> None:
    store.insert_skill_candidate(WS, candidate("calc"))
    active = candidate("calc", State.ACTIVE).model_copy(update={"skill_hash": "h" * 64, "updated_at": 2})

    assert not store.update_skill_candidate(WS, active, (State.RETIRING,))
    assert store.skill_candidate(WS, "calc") == candidate("calc")
    assert not store.update_skill_candidate(OTHER_WS, active, (State.PENDING,))

    assert store.update_skill_candidate(WS, active, (State.PENDING, State.RETIRING))
    assert store.skill_candidate(WS, "calc") == active


def test_a_lock_is_refused_while_its_holder_lives_and_its_lease_runs(store: Store) -> None:
    def alive(owner: str) -> bool:
        return True

    def dead(owner: str) -> bool:
        return False

    assert store.take_skill_lock(WS, "calc", "one", now=100, expires_at=200, holder_alive=alive)
    assert not store.take_skill_lock(WS, "calc", "two", now=150, expires_at=250, holder_alive=alive)
    assert store.take_skill_lock(OTHER_WS, "calc", "two", now=150, expires_at=250, holder_alive=alive)
    # the holder died: taken over before the lease ends
    assert store.take_skill_lock(WS, "calc", "two", now=150, expires_at=250, holder_alive=dead)
    # the lease ran out: taken over though the holder lives
    assert store.take_skill_lock(WS, "calc", "three", now=250, expires_at=350, holder_alive=alive)

    store.release_skill_lock(WS, "calc", "two")  # no longer the holder: nothing released
    assert not store.take_skill_lock(WS, "calc", "four", now=300, expires_at=400, holder_alive=alive)
    store.release_skill_lock(WS, "calc", "three")
    assert store.take_skill_lock(WS, "calc", "four", now=300, expires_at=400, holder_alive=alive)


def test_the_evidence_reads_see_a_part_where_it_was_stored(store: Store) -> None:
    store.create_session("ses_1", WS, "scripted/test")
    call = ToolCallPart(call_id="c1", name="verify_project", arguments="{}")
    other_call = ToolCallPart(call_id="c0", name="read_file", arguments="{}")
    result = ToolResultPart(call_id="c1", name="verify_project", ok=True, output="passed")
    later_call = ToolCallPart(call_id="c2", name="verify_project", arguments="{}")
    messages = [Message(role=Role.USER, parts=[TextPart(text="verify")]),
                Message(role=Role.ASSISTANT, parts=[other_call, call]),
                Message(role=Role.TOOL, parts=[result]),
                Message(role=Role.ASSISTANT, parts=[later_call])]
    for message in messages:
        store.append_message("ses_1", message)

    stored = store.stored_part(result.id)
    assert stored is not None
    assert (stored.session_id, stored.message_id, stored.role, stored.seq, stored.workspace) == \
        ("ses_1", messages[2].id, Role.TOOL, 3, WS)
    assert stored.data == result.model_dump_json()  # the bytes the evidence digest is taken over
    assert store.stored_part("prt_missing") is None

    assert store.tool_calls_before("ses_1", stored.seq) == [other_call, call]
    assert [c.call_id for c in store.tool_calls_before("ses_1", 5)] == ["c0", "c1", "c2"]
    assert store.tool_calls_before("ses_1", 2) == []
    assert store.tool_calls_before("ses_other", 5) == []
