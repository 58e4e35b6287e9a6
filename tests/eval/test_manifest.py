"""Manifest validation: one test per rule, boundaries on both sides, every error names its field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.eval.manifest import (
    MAX_MANIFEST_BYTES,
    Manifest,
    ManifestError,
    load_manifest,
    parse_manifest,
)


def base() -> dict[str, Any]:
    return {
        "model": "openai/gpt-4.1",
        "runtimeRevision": "abc123",
        "arms": [{"name": "baseline"}, {"name": "candidate", "features": {"tail_reminders": True}}],
        "tasks": [{"id": "t1", "prompt": "fix it", "files": [{"path": "a.py", "content": "x = 1\n"}],
                   "oracle": ["python3", "check.py"]}],
    }


def parse(data: dict[str, Any]) -> Manifest:
    return parse_manifest(json.dumps(data).encode(), "m.json", "json")


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        parse(data)
    return caught.value.problems


def with_(path: str, value: Any) -> dict[str, Any]:
    """base() with one value replaced, addressed like `tasks.0.files.0.path`."""
    data = base()
    node: Any = data
    *parents, leaf = path.split(".")
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    return data


def test_minimal_manifest_gets_the_documented_defaults() -> None:
    m = parse(base())
    assert (m.repetitions, m.timeout_ms, m.command) == (3, 120_000, None)
    assert m.arms[0].tool_profile == "default" and m.arms[0].features == {}


def test_cohort_ignores_key_order_whitespace_and_spelled_out_defaults() -> None:
    explicit = base() | {"repetitions": 3, "timeoutMs": 120_000}
    reordered = dict(reversed(list(explicit.items())))
    text = json.dumps(reordered, indent=4).encode()
    assert parse_manifest(text, "m.json", "json").cohort() == parse(base()).cohort()


def test_cohort_changes_with_any_field() -> None:
    assert parse(with_("runtimeRevision", "other")).cohort() != parse(base()).cohort()
    assert parse(with_("tasks.0.prompt", "fix it!")).cohort() != parse(base()).cohort()


def test_toml_and_json_manifests_are_the_same_cohort() -> None:
    toml = b'''
model = "openai/gpt-4.1"
runtimeRevision = "abc123"
[[arms]]
name = "baseline"
[[arms]]
name = "candidate"
features = { tail_reminders = true }
[[tasks]]
id = "t1"
prompt = "fix it"
oracle = ["python3", "check.py"]
files = [{ path = "a.py", content = "x = 1\\n" }]
'''
    assert parse_manifest(toml, "m.toml", "toml").cohort() == parse(base()).cohort()


@pytest.mark.parametrize(("value", "ok"), [(0, False), (1, True), (50, True), (51, False)])
def test_repetitions_between_1_and_50(value: int, ok: bool) -> None:
    data = with_("repetitions", value)
    if ok:
        assert parse(data).repetitions == value
    else:
        assert problems(data)[0].startswith("repetitions:")


@pytest.mark.parametrize(("value", "ok"), [(99, False), (100, True), (600_000, True), (600_001, False)])
def test_timeout_between_100_ms_and_10_minutes(value: int, ok: bool) -> None:
    data = with_("timeoutMs", value)
    if ok:
        assert parse(data).timeout_ms == value
    else:
        assert problems(data)[0].startswith("timeoutMs:")


def _tasks(n: int) -> list[dict[str, Any]]:
    one = base()["tasks"][0]
    return [one | {"id": f"t{i}"} for i in range(n)]


@pytest.mark.parametrize(("count", "ok"), [(0, False), (1, True), (100, True), (101, False)])
def test_between_1_and_100_tasks(count: int, ok: bool) -> None:
    data = with_("tasks", _tasks(count))
    if ok:
        assert len(parse(data).tasks) == count
    else:
        assert problems(data)[0].startswith("tasks:")


@pytest.mark.parametrize(("count", "ok"), [(0, False), (1, True), (100, True), (101, False)])
def test_between_1_and_100_files_per_task(count: int, ok: bool) -> None:
    data = with_("tasks.0.files", [{"path": f"f{i}.txt", "content": "x"} for i in range(count)])
    if ok:
        assert len(parse(data).tasks[0].files) == count
    else:
        assert problems(data)[0].startswith("tasks[0].files:")


def test_file_content_at_most_64_kib_counted_in_bytes() -> None:
    assert parse(with_("tasks.0.files.0.content", "x" * 65_536))
    found = problems(with_("tasks.0.files.0.content", "x" * 65_537))
    assert found[0].startswith("tasks[0].files[0].content:") and "65537 bytes" in found[0]
    # 'é' is two bytes: 32,769 of them are 65,538 bytes though only 32,769 characters
    assert "bytes" in problems(with_("tasks.0.files.0.content", "é" * 32_769))[0]


def test_task_files_total_at_most_1_mib() -> None:
    sixteen = [{"path": f"f{i}.txt", "content": "x" * 65_536} for i in range(16)]  # exactly 1 MiB
    assert parse(with_("tasks.0.files", sixteen))
    found = problems(with_("tasks.0.files", [*sixteen, {"path": "one-more.txt", "content": "x"}]))
    assert found[0].startswith("tasks[0]:") and "1 MiB" in found[0]


@pytest.mark.parametrize(("length", "ok"), [(16_000, True), (16_001, False)])
def test_prompt_at_most_16000_characters(length: int, ok: bool) -> None:
    data = with_("tasks.0.prompt", "p" * length)
    if ok:
        assert parse(data)
    else:
        assert problems(data)[0].startswith("tasks[0].prompt:")


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_prompt_must_not_be_blank(prompt: str) -> None:
    assert problems(with_("tasks.0.prompt", prompt))[0].startswith("tasks[0].prompt:")


@pytest.mark.parametrize(("path", "why"), [
    ("/etc/passwd", "absolute"),
    ("../escape.py", "'..'"),
    ("src/../../escape.py", "'..'"),
    (".git/config", ".git"),
    ("sub/.GIT/hooks/pre-commit", ".git"),
    ("src\\a.py", "backslash"),
    ("C:a.py", "colon"),
    ("a\x00.py", "NUL"),
    ("a//b.py", "empty component"),
    ("./a.py", "'.'"),
    ("", "empty"),
])
def test_file_paths_must_be_plain_relative_paths(path: str, why: str) -> None:
    found = problems(with_("tasks.0.files.0.path", path))
    assert found[0].startswith("tasks[0].files[0].path:") and why in found[0]


def test_duplicate_file_paths_are_rejected() -> None:
    files = [{"path": "a.py", "content": "1"}, {"path": "a.py", "content": "2"}]
    assert "duplicate path" in problems(with_("tasks.0.files", files))[0]


def test_a_file_cannot_also_be_a_directory() -> None:
    files = [{"path": "a", "content": "1"}, {"path": "a/b.py", "content": "2"}]
    assert "which is a file" in problems(with_("tasks.0.files", files))[0]


@pytest.mark.parametrize("arms", [[{"name": "only"}], [{"name": "a"}, {"name": "b"}, {"name": "c"}]])
def test_exactly_two_arms(arms: list[dict[str, Any]]) -> None:
    assert problems(with_("arms", arms))[0].startswith("arms:")


def test_arm_names_must_differ() -> None:
    found = problems(with_("arms", [{"name": "same"}, {"name": "same"}]))
    assert found[0].startswith("arms:") and "share the name" in found[0]


def test_unknown_experimental_flag_is_named() -> None:
    found = problems(with_("arms.1.features", {"tail_remindres": True}))
    assert found[0].startswith("arms[1].features:") and "tail_remindres" in found[0]


def test_feature_values_are_booleans() -> None:
    assert problems(with_("arms.1.features", {"tail_reminders": "yes"}))[0].startswith(
        "arms[1].features.tail_reminders:")


def test_tool_profile_is_default_or_minimal() -> None:
    assert parse(with_("arms.1", {"name": "candidate", "toolProfile": "minimal"})).arms[1].tool_profile == "minimal"
    assert problems(with_("arms.1", {"name": "candidate", "toolProfile": "tiny"}))[0].startswith(
        "arms[1].toolProfile:")


def test_arm_config_flattens_nested_tables() -> None:
    from lsp_agent.eval.manifest import flatten_config

    m = parse(with_("arms.0", {"name": "baseline", "config": {"script": "/x.json", "limits": {"readLines": 50}}}))
    assert flatten_config(m.arms[0].config) == {"script": "/x.json", "limits.readLines": 50}


@pytest.mark.parametrize(("config", "why"), [
    ({"model": "other/model"}, "manifest's `model`"),
    ({"toolProfile": "minimal"}, "toolProfile"),
    ({"experimental": {"tail_reminders": True}}, "features"),
    ({"script": [None]}, "string, number or boolean"),
    ({"script": [[[["too deep"]]]]}, "string, number or boolean"),
    ({"bad key": 1}, "dotted setting name"),
])
def test_arm_config_cannot_shadow_arm_fields_or_hold_odd_values(config: dict[str, Any], why: str) -> None:
    found = problems(with_("arms.0", {"name": "baseline", "config": config}))
    assert found[0].startswith("arms[0].config:") and why in found[0]


@pytest.mark.parametrize("model", ["gpt-4.1", "openai/", "/gpt", "open ai/gpt"])
def test_model_is_provider_slash_model(model: str) -> None:
    assert problems(with_("model", model))[0].startswith("model:")


def test_required_fields_are_named_when_missing() -> None:
    data = base()
    del data["runtimeRevision"]
    assert problems(data) == ["runtimeRevision: Field required"]


def test_unknown_field_is_rejected_by_name() -> None:
    found = problems(base() | {"repetitons": 5})
    assert found == ["repetitons: Extra inputs are not permitted"]


def test_types_are_strict() -> None:
    assert problems(with_("repetitions", "3"))[0].startswith("repetitions:")
    assert problems(with_("timeoutMs", 1000.0))[0].startswith("timeoutMs:")


def test_duplicate_json_keys_are_rejected() -> None:
    text = b'{"model": "a/b", "model": "c/d"}'
    with pytest.raises(ManifestError, match="duplicate key 'model'"):
        parse_manifest(text, "m.json", "json")


def test_duplicate_task_ids_are_rejected() -> None:
    one = base()["tasks"][0]
    found = problems(with_("tasks", [one, copy.deepcopy(one)]))
    assert found[0].startswith("tasks:") and "duplicate task id 't1'" in found[0]


@pytest.mark.parametrize("task_id", ["", "has space", "-leading", "x" * 101])
def test_task_ids_are_short_plain_names(task_id: str) -> None:
    assert problems(with_("tasks.0.id", task_id))[0].startswith("tasks[0].id:")


@pytest.mark.parametrize("oracle", [[], [""]])
def test_oracle_is_a_nonempty_argv(oracle: list[str]) -> None:
    assert problems(with_("tasks.0.oracle", oracle))[0].startswith("tasks[0].oracle")


def test_command_when_given_is_a_nonempty_argv() -> None:
    assert parse(with_("command", ["my-agent", "run"])).command == ["my-agent", "run"]
    assert problems(with_("command", []))[0].startswith("command:")


def test_all_problems_are_reported_at_once() -> None:
    data = with_("repetitions", 0) | {"timeoutMs": 5}
    found = problems(data)
    assert {p.split(":")[0] for p in found} == {"repetitions", "timeoutMs"}


def test_manifest_file_at_most_8_mib(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (MAX_MANIFEST_BYTES + 1))
    with pytest.raises(ManifestError, match="8 MiB"):
        load_manifest(path)


def test_manifest_file_must_be_json_or_toml(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("model: a/b")
    with pytest.raises(ManifestError, match=r"\.json or \.toml"):
        load_manifest(path)


def test_unparsable_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("{not json")
    with pytest.raises(ManifestError, match="not valid JSON"):
        load_manifest(path)


def test_top_level_must_be_an_object() -> None:
    with pytest.raises(ManifestError, match="must be an object"):
        parse_manifest(b"[1, 2]", "m.json", "json")
