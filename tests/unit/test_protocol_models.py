"""Protocol models: wire names, strictness, limits, and the documented error mapping."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.protocol.errors import CODES, from_core, invalid_params
from lsp_agent.protocol.models import MAX_PROMPT_CHARS, RunParams, SaveDocumentsResult, StatusParams, StatusResult


def error_for(raw: object) -> tuple[int, dict[str, object], str]:
    with pytest.raises(ValidationError) as caught:
        RunParams.model_validate(raw)
    error = invalid_params(caught.value, "agent/run")
    return error.code, error.wire_data(), error.message


def test_run_params_use_camel_case_with_id_suffix() -> None:
    params = RunParams.model_validate({"prompt": "p", "sessionID": "ses_1", "maxSteps": 3})
    assert (params.session_id, params.max_steps) == ("ses_1", 3)
    assert params.wire() == {"prompt": "p", "sessionID": "ses_1", "maxSteps": 3}


def test_wrong_type_is_not_coerced_and_names_the_field() -> None:
    code, data, message = error_for({"prompt": "p", "maxSteps": "3"})
    assert (code, data) == (-32602, {"kind": "invalid_params", "status": 400, "field": "maxSteps"})
    assert "maxSteps" in message


def test_unknown_and_missing_fields_are_named() -> None:
    assert error_for({"prompt": "p", "sessionId": "x"})[1]["field"] == "sessionId"
    assert error_for({})[1]["field"] == "prompt"
    assert "missing field `prompt`" in error_for({})[2]


def test_a_prompt_over_the_limit_is_too_large() -> None:
    code, data, message = error_for({"prompt": "x" * (MAX_PROMPT_CHARS + 1)})
    assert (code, data) == (-32602, {"kind": "too_large", "status": 413, "field": "prompt"})
    assert str(MAX_PROMPT_CHARS) in message
    RunParams.model_validate({"prompt": "x" * MAX_PROMPT_CHARS})


def test_core_refusals_map_onto_documented_codes_by_kind() -> None:
    assert from_core(AgentError(AgentErrorKind.BUSY, "running")).code == -32009
    assert from_core(AgentError(AgentErrorKind.UNKNOWN_SESSION, "no")).code == -32004
    assert from_core(AgentError(AgentErrorKind.INVALID_PARAMS, "empty")).code == -32602
    assert from_core(AgentError(AgentErrorKind.PROVIDER_ERROR, "down")).data.status == 503
    documented = {(c.code, c.status, kind) for c in CODES for kind in c.kinds}
    for kind in AgentErrorKind:  # every kind the core can refuse with is in the documented table
        error = from_core(AgentError(kind, "m"))
        assert (error.code, error.data.status, kind.value) in documented


def test_status_is_optional_and_results_omit_nothing_required() -> None:
    assert StatusParams.model_validate({}).session_id is None
    result = StatusResult(state="idle", verification="not_run", step=0)  # type: ignore[arg-type]
    assert result.wire() == {"state": "idle", "verification": "not_run", "step": 0}


def test_save_documents_answer_tolerates_extra_fields_but_not_wrong_types() -> None:
    answer = SaveDocumentsResult.model_validate({"saved": ["file:///a"], "extra": 1})
    assert answer.saved == ["file:///a"] and answer.failed == []
    with pytest.raises(ValidationError):
        SaveDocumentsResult.model_validate({"saved": "file:///a"})
