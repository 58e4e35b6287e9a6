"""run_command: one allow-listed program, argv split like a shell but never run through one.

No shell means `;`, `|`, `&&`, `$(...)` and backticks are plain argument text. The process runs
in its own group (killed as a whole on timeout or cancellation), in the workspace root, with
credentials scrubbed from its environment; output is bounded and made stable.
"""

from __future__ import annotations

import shlex
import shutil
import signal
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from lsp_agent.config import Limits, ToolSettings
from lsp_agent.core.history import ErrorKind
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.tools.process import head_tail, run_process, scrubbed_env

_DEFAULTS = Limits()
_TOOL_DEFAULTS = ToolSettings()
# Refused whatever the configuration says: committing and publishing are left to the user.
_GIT_NEVER = frozenset({"commit", "push"})
# git options that make a read-only subcommand write files or run configured programs.
_GIT_RISKY_OPTIONS = ("--output", "--ext-diff", "--exec", "--upload-pack", "--receive-pack")


class RunCommandArgs(StrictArgs):
    command: str = Field(
        min_length=1,
        description="The command line, split into arguments like a POSIX shell does (quotes group "
        "words) but never run through a shell: pipes, ';', '&&', redirections and $(...) are passed "
        "as literal arguments. The program must be a bare name from the allow-list "
        f"({', '.join(_TOOL_DEFAULTS.allowed_programs)} by default); for git only the read-only "
        f"subcommands ({', '.join(_TOOL_DEFAULTS.git_read_only)}).",
    )
    timeout_s: float | None = Field(
        None, gt=0,
        description=f"Seconds before the command and all its child processes are killed; default "
        f"{_DEFAULTS.command_timeout_s:g}, at most {_DEFAULTS.command_timeout_max_s:g}.",
    )


def check_argv(argv: list[str], tools: ToolSettings) -> str | None:
    """Why this argv may not run (a refusal message), or None when it is allowed."""
    program = argv[0]
    if "/" in program or "\\" in program:
        return (f"'{program}' is a path; give the bare program name from the allow-list "
                f"({', '.join(tools.allowed_programs)}).")
    if program not in tools.allowed_programs:
        return (f"'{program}' is not an allowed program. Allowed: {', '.join(tools.allowed_programs)}. "
                "To change files use apply_patch or write_file; to run the checks use verify_project.")
    if program == "git":
        sub = argv[1] if len(argv) > 1 else ""
        if sub in _GIT_NEVER:
            return (f"'git {sub}' is never run by the agent: committing and pushing are left to the "
                    "user. Finish the change and say it is ready to commit.")
        if sub.startswith("-"):
            return (f"git options before the subcommand ('{sub}') are not allowed; the subcommand must "
                    f"come first, one of: {', '.join(tools.git_read_only)}.")
        if sub not in tools.git_read_only:
            shown = f"'git {sub}'" if sub else "git without a subcommand"
            return f"{shown} is not allowed; only read-only subcommands: {', '.join(tools.git_read_only)}."
        risky = [a for a in argv[2:] if a.startswith(_GIT_RISKY_OPTIONS)]
        if risky:
            return f"the git option '{risky[0]}' can write files or run programs and is not allowed."
    return None


def _stable(text: str, root: Path) -> str:
    # Absolute temp paths would change from run to run; show them relative to the root.
    for spelled in sorted({str(root.resolve()), str(root)}, key=len, reverse=True):
        text = text.replace(spelled, ".")
    return text


class RunCommand(Tool[RunCommandArgs]):
    name = "run_command"
    access = Access.EXEC
    args_model = RunCommandArgs
    summary = (
        "Run one allow-listed program in the workspace root and return `OK: exit=0 <command>` or "
        "`ERROR: exit=N <command>` followed by its combined stdout/stderr. Never uses a shell. On "
        "timeout the whole process group is killed and the partial output returned. Output over "
        f"{_DEFAULTS.output_chars} characters keeps its beginning and end. Credentials are removed "
        "from the environment."
    )
    use_when = (
        "you need to run a script, a single test file, or inspect the repository with a read-only "
        "git command (status, diff, log, show)."
    )
    avoid_when = (
        "you want to verify the work (use verify_project), read or find files (read_file, list_dir, "
        "search_code), change files (apply_patch, write_file), or commit/push (left to the user)."
    )

    def paths(self, args: RunCommandArgs) -> Iterable[str]:
        return ()  # commands always run in the workspace root

    async def run(self, args: RunCommandArgs, ctx: ToolContext) -> ToolResult:
        limits = ctx.settings.limits
        timeout = args.timeout_s if args.timeout_s is not None else limits.command_timeout_s
        if timeout > limits.command_timeout_max_s:
            return ToolResult.failure(
                ErrorKind.PARAMETER_MISMATCH,
                f"ERROR: timeout_s={timeout:g} is above the maximum of {limits.command_timeout_max_s:g} "
                "seconds. Use a smaller timeout, or run a smaller part of the work.",
            )
        try:
            argv = shlex.split(args.command)
        except ValueError as exc:
            return ToolResult.failure(
                ErrorKind.PARAMETER_MISMATCH,
                f"ERROR: the command cannot be split into arguments ({exc}). Check the quoting.",
            )
        if not argv:
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, "ERROR: the command is empty.")
        if any("\x00" in a for a in argv):
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, "ERROR: the command contains a NUL byte.")
        shown = shlex.join(argv)
        refusal = check_argv(argv, ctx.settings.tools)
        if refusal:
            return ToolResult.failure(ErrorKind.DENIED, f"ERROR: refused: {shown}. {refusal}")
        if shutil.which(argv[0]) is None:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE, f"ERROR: '{argv[0]}' is allowed but not installed on this machine."
            )
        try:
            outcome = await run_process(argv, ctx.root, timeout, env=scrubbed_env())
        except OSError as exc:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE, f"ERROR: could not start {argv[0]}: {exc.strerror or exc}."
            )
        body, cut = head_tail(_stable(outcome.output, ctx.root), limits.output_chars)
        notes: list[str] = []
        if cut or outcome.output_truncated:
            notes.append(
                f"[TRUNCATED] the output was longer than {limits.output_chars} characters; the first and "
                f"last {limits.output_chars // 2} are shown. Narrow the command to see the rest."
            )
        tail = "\n".join([*notes, body.rstrip("\n") or "(no output)"])
        if outcome.timed_out:
            return ToolResult.failure(
                ErrorKind.TIMEOUT,
                f"ERROR: timeout after {timeout:g}s (process group killed): {shown}\n"
                f"Partial output:\n{tail}",
                exit_code=None, timed_out=True,
            )
        if outcome.signal is not None:
            try:
                name = signal.Signals(outcome.signal).name
            except ValueError:
                name = str(outcome.signal)
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"ERROR: exit=-{outcome.signal} (killed by signal {name}) {shown}\n{tail}",
                exit_code=-outcome.signal, timed_out=False,
            )
        code = outcome.exit_code if outcome.exit_code is not None else -1
        if code == 0:
            return ToolResult.success(f"OK: exit=0 {shown}\n{tail}", exit_code=0, timed_out=False)
        return ToolResult.failure(
            ErrorKind.TOOL_FAILURE, f"ERROR: exit={code} {shown}\n{tail}", exit_code=code, timed_out=False
        )
