"""Editor settings layering: invalid values fall back to defaults, each problem reported once."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.server.settings import OnceReporter, resolve


def test_invalid_values_fall_back_to_defaults_and_valid_ones_apply(tmp_path: Path) -> None:
    settings, problems = resolve(tmp_path, {"maxSteps": "x", "limits": {"read_lines": 0, "list_depth": 3}}, None)
    assert settings.max_steps == 40 and settings.limits.read_lines == 800 and settings.limits.list_depth == 3
    assert any("maxSteps" in p for p in problems) and any("limits.read_lines" in p for p in problems)


def test_client_section_wins_over_initialization_options(tmp_path: Path) -> None:
    settings, problems = resolve(tmp_path, {"maxSteps": 5, "model": "scripted/a"}, {"maxSteps": 7})
    assert (settings.max_steps, settings.model, problems) == (7, "scripted/a", [])


def test_unknown_keys_and_incomplete_objects_are_dropped(tmp_path: Path) -> None:
    settings, problems = resolve(tmp_path, {"bogus": 1, "providers": {"x": {"wire": "chat"}}, "maxSteps": 9}, None)
    assert settings.max_steps == 9 and settings.providers == {}
    assert any("bogus" in p for p in problems) and any("providers.x" in p for p in problems)


def test_workspace_file_survives_a_bad_editor_value(tmp_path: Path) -> None:
    config = tmp_path / ".lsp-agent" / "config.toml"
    config.parent.mkdir()
    config.write_text('[[tools.verify]]\nkind = "test"\nargv = ["python", "check.py"]\n', encoding="utf-8")
    settings, problems = resolve(tmp_path, {"tools": {"allowed_programs": "python"}}, None)
    assert settings.tools.verify is not None and settings.tools.verify[0].argv == ["python", "check.py"]
    assert any("tools.allowed_programs" in p for p in problems)


def test_an_invalid_workspace_file_is_ignored_with_a_problem(tmp_path: Path) -> None:
    config = tmp_path / ".lsp-agent" / "config.toml"
    config.parent.mkdir()
    config.write_text("maxSteps = 'lots'\ninstructionProfile = 'huge'\n", encoding="utf-8")
    settings, problems = resolve(tmp_path, {"model": "scripted/a"}, None)
    assert (settings.model, settings.max_steps, settings.instruction_profile) == ("scripted/a", 40, "default")
    assert any("config files ignored" in p for p in problems)


def test_non_object_layers_are_ignored(tmp_path: Path) -> None:
    settings, problems = resolve(tmp_path, ["not", "an", "object"], "nor this")
    assert settings.max_steps == 40 and len(problems) == 2


def test_reporter_tells_each_problem_once() -> None:
    reporter = OnceReporter()
    assert reporter.fresh(["a", "b"]) == ["a", "b"]
    assert reporter.fresh(["b", "c"]) == ["c"]
    assert reporter.fresh(["a"]) == []
