"""The static instructions: first in every request and byte-identical across steps and
generations (no dates, IDs or paths that change), so providers can cache the prefix."""

from __future__ import annotations

import re
from typing import Any

from lsp_agent.domain.ports import ToolSpec

BASE_INSTRUCTIONS = """\
You are lsp-agent, a coding agent working inside the user's repository through tools.

How to work:
- Look before you change: read the files you will edit (read_file), find code with search_code and
  list_dir. Paths are always relative to the workspace root.
- Change files with apply_patch (exact replacement, or a `*** Begin Patch` patch for several files).
  Create new files with write_file. Keep changes minimal and in the file's existing style.
- Check your work with verify_project: it runs the project's own tests and type checks. Only its result
  counts as evidence; saying that something works does not make it so. If it fails, read the failures,
  fix, and verify again.
- run_command runs one allow-listed program without a shell; committing and pushing are left to the user.
- Every tool result starts with OK: or ERROR:. An ERROR says what to do next: follow it instead of
  repeating the same call.
- When the task is done (or you cannot continue), reply without tool calls: say what you changed, how it
  was verified, and anything left open.
"""

#: `instructionProfile = "compact"`: the same rules in a few lines, for small local models (a 135M-1B
#: model loses the thread in 2k tokens of instructions and schemas, and a CPU server spends a minute
#: processing them before the first token).
COMPACT_INSTRUCTIONS = """\
You are lsp-agent, a coding agent in the user's repository. Work through the tools, one call at a time.
Read a file (read_file) before you change it (apply_patch). Check your work with verify_project: only its
result counts. Tool results start with OK: or ERROR:; after an ERROR, do what it says.
When done, reply without tool calls: what you changed and how it was verified.
"""

_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)", re.DOTALL)
#: a compact description is cut here even without a sentence end
COMPACT_DESCRIPTION_CHARS = 240


#: What the model is told in the editor's Plan and Ask modes, after the instructions. The harness enforces
#: the limits whatever the model makes of this; the note only saves the model from learning them by refusal.
MODE_NOTES = {
    "plan": "\nMode: Plan. Do not change anything: no edits, only read-only commands. Investigate, then end "
            "with a message whose first line is `## Plan` followed by numbered steps the user can run in Agent "
            "mode as they are.",
    "ask": "\nMode: Ask. Answer the user's question from reading the workspace. Do not change anything; no "
           "command runs in this mode.",
}


def mode_note(mode: str) -> str:
    return MODE_NOTES.get(mode, "")


def instructions_for(profile: str) -> str:
    return COMPACT_INSTRUCTIONS if profile == "compact" else BASE_INSTRUCTIONS


def _first_sentence(text: str) -> str:
    paragraph = text.strip().split("\n\n", 1)[0].strip()
    match = _SENTENCE.match(paragraph)
    first = match.group(1) if match else paragraph
    return first if len(first) <= COMPACT_DESCRIPTION_CHARS else first[:COMPACT_DESCRIPTION_CHARS - 1] + "…"


def _without_descriptions(schema: Any) -> Any:
    """A JSON Schema without its `description` annotations (types, enums, required stay: the controller
    checks the same schema either way). Property *names* are kept, even one called "description"."""
    if isinstance(schema, list):
        return [_without_descriptions(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _without_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = _without_descriptions(value)
    return out


def compact_spec(spec: ToolSpec) -> ToolSpec:
    """The tool as a small model sees it: the first sentence of its description, no parameter prose."""
    return ToolSpec(name=spec.name, description=_first_sentence(spec.description),
                    parameters=_without_descriptions(spec.parameters))


#: compact specs by the identity of their full spec (kept alive with it, so an id is never reused):
#: the same objects every step keep the request's encoded head and tool digest cached
_COMPACT: dict[int, tuple[ToolSpec, ToolSpec]] = {}
_COMPACT_MAX = 512


def _compact_cached(spec: ToolSpec) -> ToolSpec:
    entry = _COMPACT.get(id(spec))
    if entry is None or entry[0] is not spec:
        if len(_COMPACT) >= _COMPACT_MAX:  # tool lists that came and went (MCP servers): start over
            _COMPACT.clear()
        entry = _COMPACT[id(spec)] = (spec, compact_spec(spec))
    return entry[1]


def specs_for(profile: str, specs: list[ToolSpec]) -> list[ToolSpec]:
    return [_compact_cached(s) for s in specs] if profile == "compact" else specs
