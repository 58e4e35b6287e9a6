"""run_command: one allow-listed program, argv split like a shell but never run through one.

No shell means `;`, `|`, `&&`, `$(...)` and backticks are plain argument text. The process runs
in the OS sandbox (lsp_agent.sandbox), in its own group (killed as a whole on timeout or
cancellation), in the workspace root, with an environment built from an allow-list; output is
bounded and made stable.
"""

from __future__ import annotations

import shlex
import shutil
import signal
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from lsp_agent.core.approval import ApprovalSubject
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind
from lsp_agent.sandbox import Sandbox, SandboxRefused
from lsp_agent.sandbox.git import GitConfigRefused
from lsp_agent.settings.config import Limits, ToolSettings
from lsp_agent.tools.argv_rules import check_argv
from lsp_agent.tools.process import head_tail, run_process

_DEFAULTS = Limits()
_TOOL_DEFAULTS = ToolSettings()


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
        f"{_DEFAULTS.output_chars} characters keeps its beginning and end. Runs in a sandbox: "
        "the workspace is writable except .git/ and .lsp-agent/, everything else read-only, $HOME "
        "hidden, no network; the environment holds no credentials."
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

    def commands(self, args: RunCommandArgs) -> Iterable[list[str]]:
        # (a command line that does not split raises ValueError: run reports it, nothing starts)
        return [shlex.split(args.command)]

    def approval(self, args: RunCommandArgs, ctx: ToolContext) -> ApprovalSubject | None:
        # Only a command that would actually start is put to the user; the rest fail on their own.
        try:
            argv = shlex.split(args.command)
        except ValueError:
            return None
        if not argv or any("\x00" in a for a in argv) or check_argv(argv, ctx.settings.tools, ctx.root.resolve()):
            return None
        if shutil.which(argv[0]) is None:
            return None
        sandbox = Sandbox.from_settings(ctx.settings, ctx.root)
        return ApprovalSubject(kind="command", what=shlex.join(argv), program=argv[0], commands=(tuple(argv),),
                               unsandboxed=sandbox.needs_approval(),
                               retryable=sandbox.mode != "danger-full-access")

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
        refusal = check_argv(argv, ctx.settings.tools, ctx.root.resolve())
        if refusal:
            return ToolResult.failure(ErrorKind.DENIED, f"ERROR: refused: {shown}. {refusal}")
        if shutil.which(argv[0]) is None:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE, f"ERROR: '{argv[0]}' is allowed but not installed on this machine."
            )
        try:
            outcome = await run_process(argv, ctx.root, timeout, sandbox=Sandbox.from_settings(ctx.settings, ctx.root),
                                        approved_unsandboxed=ctx.approved_unsandboxed)
        except (SandboxRefused, GitConfigRefused) as exc:
            return ToolResult.failure(ErrorKind.DENIED, f"ERROR: refused: {shown}. {exc}")
        except OSError as exc:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE, f"ERROR: could not start {argv[0]}: {exc.strerror or exc}."
            )
        if outcome.start_error is not None:
            # bubblewrap's own exit 1 is not the command's: saying "exit=1" would send the model
            # looking for a bug in a program that never ran.
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"ERROR: could not start {shown}: the sandbox could not run it: {outcome.start_error}. "
                "The command never ran; its program is not reachable inside the sandbox.",
                exit_code=None, timed_out=False,
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
