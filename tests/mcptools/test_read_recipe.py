"""read_recipe (experimental `read_only_recipes`): dependent read-only steps through the controller,
with $ref, select and budgets — driven by a scripted model through the real loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsp_agent.core.session import AgentSession
from lsp_agent.domain.events import StopReason
from lsp_agent.domain.history import ErrorKind
from tests.helpers import call, git_repo, reply, run_script

RECIPES = {"experimental": {"read_only_recipes": True}}
FILES = {"src/app.py": "import util\n\nprint(util.greet('x'))\n",
         "src/util.py": "def greet(name):\n    return f'hello {name}'\n\n\ndef unused():\n    pass\n",
         "README.md": "demo\n"}


def ref(step: str, *path: str | int) -> dict[str, Any]:
    return {"$ref": {"step": step, "path": list(path)}}


THREE_STEPS = {
    "steps": [
        {"id": "files", "tool": "list_dir", "parameters": {"path": "src"}},
        {"id": "defs", "tool": "search_code",
         "parameters": {"pattern": "^def greet", "path": ref("files", "paths", 1)}},
        {"id": "source", "tool": "read_file",
         "parameters": {"path": ref("defs", "matches", 0, "path"), "start_line": ref("defs", "matches", 0, "line"),
                        "end_line": 2}},
    ],
    "select": [{"step": "files", "path": ["paths"], "contains": "util", "limit": 1},
               {"step": "source", "path": ["text"]}],
}


async def _recipe(tmp_path: Path, args: dict[str, Any] | str, **overrides: Any) -> tuple[Any, AgentSession]:
    root = git_repo(tmp_path / "ws", FILES)
    raw = args if isinstance(args, str) else json.dumps(args)
    settings = {**RECIPES, **overrides}
    result, session = await run_script(root, [reply(call("read_recipe", raw=raw)), reply(text="done")], **settings)
    assert result.stop_reason is StopReason.FINAL
    return session.history[-2].tool_results()[0], session


async def test_three_dependent_steps_return_only_the_selection(tmp_path: Path) -> None:
    part, session = await _recipe(tmp_path, THREE_STEPS)
    assert part.ok, part.output
    head, body = part.output.split("\n", 1)
    assert head == "OK: read_recipe ran 3 steps"
    selected = json.loads(body)
    assert selected[0] == {"step": "files", "path": ["paths"], "value": ["src/util.py"]}
    assert selected[1]["value"] == "     1\tdef greet(name):\n     2\t    return f'hello {name}'"
    # Each child ran through the controller with the resolved arguments; its record stays in the history.
    children = part.metadata["children"]
    assert [c["id"] for c in children] == ["files", "defs", "source"] and all(c["ok"] for c in children)
    assert children[1]["arguments"] == {"pattern": "^def greet", "path": "src/util.py"}
    assert children[2]["arguments"] == {"path": "src/util.py", "start_line": 1, "end_line": 2}
    assert "def unused" in children[2]["output"] or children[2]["outputChars"] > 0
    assert part.metadata["read"] == ["src/util.py"]
    # The session's file facts saw the child read (stale detection, re-read rules).
    assert "src/util.py" in session.files.read_steps


async def test_default_selection_is_the_last_steps_canonical_result(tmp_path: Path) -> None:
    recipe = {"steps": [{"id": "g", "tool": "search_code", "parameters": {"pattern": "greet"}}]}
    part, _ = await _recipe(tmp_path, recipe)
    value = json.loads(part.output.split("\n", 1)[1])
    assert value["step"] == "g"
    assert value["value"]["truncated"] is False
    assert {"path": "src/util.py", "line": 1, "text": "def greet(name):"} in value["value"]["matches"]


async def test_step_count_boundary(tmp_path: Path) -> None:
    step = {"tool": "list_dir", "parameters": {"path": "."}}
    eight = {"steps": [{"id": f"s{i}", **step} for i in range(8)]}
    nine = {"steps": [{"id": f"s{i}", **step} for i in range(9)]}
    ok, _ = await _recipe(tmp_path / "a", eight)
    assert ok.ok and ok.output.startswith("OK: read_recipe ran 8 steps")
    refused, _ = await _recipe(tmp_path / "b", nine)
    assert refused.error_kind is ErrorKind.PARAMETER_MISMATCH and "at most 8" in refused.output
    assert "children" not in refused.metadata  # nothing ran


async def test_argument_budget_boundary(tmp_path: Path) -> None:
    from lsp_agent.tools.read_recipe import ReadRecipeArgs

    def sized(total: int) -> dict[str, Any]:
        """A valid recipe whose arguments (as JSON) are exactly `total` bytes."""
        base: dict[str, Any] = {"steps": [{"id": "r", "tool": "read_file", "parameters": {"path": "README.md"}}],
                                "select": [{"step": "r", "path": ["text"], "contains": ""}]}
        pad = total - len(ReadRecipeArgs.model_validate(base).model_dump_json().encode())
        base["select"][0]["contains"] = "x" * pad
        assert len(ReadRecipeArgs.model_validate(base).model_dump_json().encode()) == total
        return base

    limit = 32 * 1024
    at, _ = await _recipe(tmp_path / "a", sized(limit))
    assert "the limit is" not in at.output
    past, _ = await _recipe(tmp_path / "b", sized(limit + 1))
    assert past.error_kind is ErrorKind.PARAMETER_MISMATCH and f"{limit + 1} bytes; the limit is {limit}" in past.output


async def test_intermediate_budget_stops_the_recipe_and_keeps_the_records(tmp_path: Path) -> None:
    recipe = {"steps": [{"id": "a", "tool": "read_file", "parameters": {"path": "src/util.py"}},
                        {"id": "b", "tool": "read_file", "parameters": {"path": "src/app.py"}}]}
    part, _ = await _recipe(tmp_path, recipe, limits={"recipe_intermediate_bytes": 1024})
    assert part.ok  # small files fit
    root = tmp_path / "big"
    big = {"big.txt": "y" * 1500 + "\n", **FILES}
    git_repo(root, big)
    recipe = {"steps": [{"id": "a", "tool": "read_file", "parameters": {"path": "big.txt"}},
                        {"id": "b", "tool": "read_file", "parameters": {"path": "src/app.py"}}]}
    _, session = await run_script(root, [reply(call("read_recipe", raw=json.dumps(recipe))), reply(text="x")],
                                  **RECIPES, limits={"recipe_intermediate_bytes": 1024})
    over = session.history[-2].tool_results()[0]
    assert not over.ok and "passed 1024 bytes at step 'a'" in over.output
    assert [c["id"] for c in over.metadata["children"]] == ["a"]  # b never ran


async def test_forbidden_tools_bad_refs_and_failing_children(tmp_path: Path) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"steps": [{"id": "x", "tool": "run_command", "parameters": {"command": "ls"}}]}, "cannot run in a recipe"),
        ({"steps": [{"id": "x", "tool": "read_recipe", "parameters": {}}]}, "cannot run in a recipe"),
        ({"steps": [{"id": "x", "tool": "mcp__time__get_current_time", "parameters": {}}]}, "no code, shell"),
        ({"steps": [{"id": "x", "tool": "write_file", "parameters": {"path": "a", "content": "b"}}]}, "writes"),
        ({"steps": [{"id": "x", "tool": "read_file", "parameters": {"path": ref("later", "paths", 0)}},
                    {"id": "later", "tool": "list_dir", "parameters": {}}]}, "not an earlier step"),
        ({"steps": [{"id": "f", "tool": "list_dir", "parameters": {"path": "src"}},
                    {"id": "x", "tool": "read_file", "parameters": {"path": ref("f", "paths", 99)}}]},
         "does not exist in that result"),
        ({"steps": [{"id": "x", "tool": "read_file", "parameters": {"path": "../outside"}}]}, "path_denied"),
        ({"steps": [{"id": "x", "tool": "read_file", "parameters": {"path": "missing.py"}}]}, "does not exist"),
        ({"steps": [{"id": "x", "tool": "read_file", "parameters": {"path": "README.md", "bogus": 1}}]},
         "unknown parameter 'bogus'"),
        ({"steps": [{"id": "x", "tool": "list_dir", "parameters": {}}], "select": [{"step": "nope"}]},
         "select names step 'nope'"),
    ]
    for i, (recipe, expected) in enumerate(cases):
        part, _ = await _recipe(tmp_path / f"c{i}", recipe)
        assert not part.ok and part.output.startswith("ERROR:"), recipe
        assert expected in part.output, (expected, part.output)


async def test_the_deadline_cancels_the_recipe(tmp_path: Path) -> None:
    recipe = {"steps": [{"id": f"s{i}", "tool": "list_dir", "parameters": {}} for i in range(8)]}
    part, _ = await _recipe(tmp_path, recipe, limits={"recipe_deadline_s": 0.001})
    assert part.error_kind is ErrorKind.TIMEOUT and "deadline" in part.output


async def test_flag_off_means_no_read_recipe(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "ws", FILES)
    _, session = await run_script(root, [reply(call("read_recipe", raw=json.dumps(THREE_STEPS))),
                                         reply(text="done")])
    assert session.history[-2].tool_results()[0].error_kind is ErrorKind.UNKNOWN_TOOL
