"""read_recipe (experimental flag `read_only_recipes`): up to 8 dependent read-only steps in one call.

Each step is a read_file, list_dir or search_code call that runs through the controller (its own
argument, path and size checks) and the tool itself, with the generation's cancellation and a
60 s deadline for the whole recipe. Steps see earlier steps' canonical results through `$ref`.
The model gets only the selection; each child's own record (arguments, status, bounded output)
stays in this call's metadata in the history. No code, shell, writes, MCP tools or nesting: only
the three read tools can be named.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import Field

from lsp_agent.core.cancel import cancel_signal
from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind, ToolCallPart
from lsp_agent.tools.recipe_data import RecipeError, apply_select, canonical, resolve_refs, walk

CHILD_TOOLS = ("read_file", "list_dir", "search_code")


class RecipeStep(StrictArgs):
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,40}$", description="Name later steps and `select` use.")
    tool: str = Field(description="read_file, list_dir or search_code.")
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        description='That tool\'s arguments; any value may be {"$ref": {"step": ID, "path": [key or index, ...]}}.')


class RecipeSelect(StrictArgs):
    step: str
    path: list[str | int] = Field(default_factory=list, description="Keys/indexes into that step's result.")
    contains: str | None = Field(None, description="Arrays: keep items containing this literal text.")
    limit: int | None = Field(None, ge=1, description="Arrays: keep the first N items.")


class ReadRecipeArgs(StrictArgs):
    steps: list[RecipeStep] = Field(min_length=1, description="Up to 8 steps, run in order.")
    select: list[RecipeSelect] | None = Field(None, description="What to return; default: the last step's result.")


class ReadRecipe(Tool[ReadRecipeArgs]):
    name = "read_recipe"
    access = Access.READ
    args_model = ReadRecipeArgs
    summary = (
        "Run up to 8 dependent read-only steps (read_file, list_dir, search_code) in one call and return only "
        "what `select` picks. A step's parameters may reference an earlier result: "
        '{"$ref": {"step": "files", "path": ["paths", 0]}}. Results: list_dir → {paths, truncated}; '
        "search_code → {matches: [{path, line, text}], truncated}; read_file → {kind, text, truncated}. "
        "`select` items: {step, path, contains (literal filter on arrays), limit}."
    )
    use_when = ("the next reads depend on earlier results (find, then read what was found) and you need only "
                "a part of them.")
    avoid_when = ("one call does it (call that tool), or you must edit, run commands or use MCP tools "
                  "(not allowed here).")

    def __init__(self, children: ToolRegistry) -> None:
        self.children = children

    async def run(self, args: ReadRecipeArgs, ctx: ToolContext) -> ToolResult:
        limits = ctx.settings.limits
        if len(args.steps) > limits.recipe_steps:
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH,
                                      f"ERROR: {len(args.steps)} steps; a recipe has at most {limits.recipe_steps}. "
                                      "Split it, or call the tools directly.")
        size = len(args.model_dump_json().encode("utf-8"))
        if size > limits.recipe_args_bytes:
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH,
                                      f"ERROR: the recipe's arguments are {size} bytes; the limit is "
                                      f"{limits.recipe_args_bytes}. Use fewer or smaller steps.")
        problem = _static_problem(args, self.children)
        if problem:
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, f"ERROR: {problem}")
        run = _Run(self.children, ctx)
        try:
            async with asyncio.timeout(limits.recipe_deadline_s):
                failure = await run.steps(args.steps)
        except TimeoutError:
            failure = ToolResult.failure(ErrorKind.TIMEOUT,
                                         f"ERROR: timeout: the recipe passed its {limits.recipe_deadline_s:g} s "
                                         f"deadline at step {len(run.records) + 1}; the steps before it finished.")
        meta: dict[str, Any] = {"children": run.records, "read": sorted(run.read)}
        if failure is not None:
            return ToolResult(False, f"{failure.output}\n{_steps_line(run.records)}", failure.error_kind, meta)
        try:
            selected = _select(args, run.results)
        except RecipeError as exc:
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, f"ERROR: select: {exc}", **meta)
        text = json.dumps(selected, ensure_ascii=False, sort_keys=True)
        if len(text) > limits.recipe_output_chars:
            text = (text[: limits.recipe_output_chars] + f"\n[TRUNCATED] the selection had {len(text)} characters; "
                    f"showed {limits.recipe_output_chars}. Select less (a path, contains, limit).")
        return ToolResult.success(f"OK: read_recipe ran {len(run.records)} steps\n{text}", **meta)


def _static_problem(args: ReadRecipeArgs, children: ToolRegistry) -> str | None:
    seen: set[str] = set()
    for step in args.steps:
        if step.tool not in CHILD_TOOLS or children.get(step.tool) is None:
            allowed = ", ".join(t for t in CHILD_TOOLS if children.get(t) is not None)
            return (f"step {step.id!r}: {step.tool!r} cannot run in a recipe; allowed: {allowed} (no code, shell, "
                    "writes, MCP tools or nested recipes).")
        if step.id in seen:
            return f"step id {step.id!r} is used twice"
        seen.add(step.id)
    for sel in args.select or []:
        if sel.step not in seen:
            return f"select names step {sel.step!r}, which the recipe does not have"
    return None


def _steps_line(records: list[dict[str, Any]]) -> str:
    done = ", ".join(f"{r['id']}={'ok' if r['ok'] else 'error'}" for r in records) or "none"
    return f"[steps run: {done}]"


def _select(args: ReadRecipeArgs, results: dict[str, dict[str, Any]]) -> Any:
    if not args.select:
        last = args.steps[-1].id
        return {"step": last, "value": results[last]}
    out = []
    for sel in args.select:
        value = walk(results[sel.step], list(sel.path), f"select {sel.step!r}")
        out.append({"step": sel.step, "path": list(sel.path),
                    "value": apply_select(value, sel.contains, sel.limit)})
    return out


class _Run:
    def __init__(self, children: ToolRegistry, ctx: ToolContext) -> None:
        self.children = children
        self.ctx = ctx
        self.results: dict[str, dict[str, Any]] = {}
        self.records: list[dict[str, Any]] = []
        self.read: set[str] = set()
        self.used = 0

    async def steps(self, steps: list[RecipeStep]) -> ToolResult | None:
        """Run the steps in order; the first failure stops the recipe and is returned."""
        from lsp_agent.core import controller  # the core imports this module's package at start-up

        limits = self.ctx.settings.limits
        cancel = cancel_signal.get()
        for step in steps:
            if cancel is not None and cancel.is_set():
                return ToolResult.failure(ErrorKind.CANCELLED,
                                          f"cancelled: the run was cancelled before step {step.id!r}.")
            try:
                params = resolve_refs(step.parameters, self.results, f"step {step.id!r}")
            except RecipeError as exc:
                return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, f"ERROR: {exc}")
            call = ToolCallPart(call_id=f"{step.id}", name=step.tool, arguments=json.dumps(params))
            verdict = controller.check(call, self.children, self.ctx)  # each child's own checks
            if isinstance(verdict, controller.Rejection):
                self._record(step, params, False, verdict.output, verdict.kind)
                return ToolResult.failure(verdict.kind, f"ERROR: step {step.id!r}: {verdict.output}")
            result = await verdict.tool.run(verdict.args, self.ctx)
            self._record(step, params, result.ok, result.output, result.error_kind)
            if not result.ok:
                return ToolResult.failure(result.error_kind or ErrorKind.TOOL_FAILURE,
                                          f"ERROR: step {step.id!r} ({step.tool}) failed: {result.output}")
            self.read.update(p for p in result.metadata.get("read") or [] if isinstance(p, str))
            self.used += len(result.output.encode("utf-8", errors="surrogatepass"))
            if self.used > limits.recipe_intermediate_bytes:
                return ToolResult.failure(
                    ErrorKind.PARAMETER_MISMATCH,
                    f"ERROR: the steps' results passed {limits.recipe_intermediate_bytes} bytes at step {step.id!r} "
                    "(the intermediate budget). Narrow the steps (a path glob, line ranges, fewer results).")
            self.results[step.id] = canonical(step.tool, result)
        return None

    def _record(self, step: RecipeStep, params: Any, ok: bool, output: str, kind: ErrorKind | None) -> None:
        bound = self.ctx.settings.limits.trace_result_chars
        self.records.append({"id": step.id, "tool": step.tool, "arguments": params, "ok": ok,
                             "errorKind": kind.value if kind else None, "output": output[:bound],
                             "outputChars": len(output)})
