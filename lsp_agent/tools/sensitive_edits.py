"""The edit tools' side of sensitive paths: which paths of an edit other programs run on open, what
the user is shown to approve it, and the refusal when no approval was given.

A path counts as spelled and as resolved (a link elsewhere in the workspace that leads to
`.envrc` writes `.envrc`). The approval is asked by the dispatcher (`Tool.approval`); the tool
itself refuses unless the call's context says it was granted, so a path through the tools that
asks no one (approvalPolicy `never`, no approver at all) fails closed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lsp_agent.core.paths import PathDenied, normalize, real_root, resolve_in_root
from lsp_agent.core.sensitive_paths import matching, remember_approved
from lsp_agent.core.tools import ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind


def sensitive_targets(root: Path, paths: Iterable[str], patterns: Iterable[str]) -> tuple[str, ...]:
    """The workspace paths among `paths` that a sensitive pattern names, as spelled or as resolved."""
    wanted = list(patterns)
    found: dict[str, None] = {}
    for raw in paths:
        rel = normalize(raw)
        if matching(rel, wanted) is not None:
            found[rel] = None
            continue
        try:
            resolved = resolve_in_root(root, rel).relative_to(real_root(root)).as_posix()
        except (PathDenied, OSError, ValueError):
            continue  # the tool refuses such a path itself
        if matching(resolved, wanted) is not None:
            found[rel] = None
    return tuple(found)


def unapproved(ctx: ToolContext, sensitive: tuple[str, ...]) -> ToolResult | None:
    """The refusal of an edit of sensitive paths the user did not approve (None: it may go ahead)."""
    if not sensitive or ctx.approved_sensitive:
        return None
    names = ", ".join(sensitive)
    if ctx.settings.approval_policy == "never":
        why = "approvalPolicy is `never`, so no one can approve it"
    else:
        why = "it needs the user's approval and none was given"
    return ToolResult.failure(
        ErrorKind.DENIED,
        f"refused: {names} is a file other programs (the editor, the shell, git, CI) run or load when the "
        f"workspace is opened (setting tools.sensitive_paths); changing it {why}. Nothing was changed. Make the "
        "rest of the change without it, and tell the user what it should contain.")


def creation_diff(path: str, text: str) -> str:
    """A new file as a unified diff, for the approval dialog."""
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def replacement_diff(path: str, old_text: str, new_text: str) -> str:
    """One exact replacement as a diff of the replaced lines, for the approval dialog."""
    removed = "".join(f"-{line}\n" for line in old_text.splitlines())
    added = "".join(f"+{line}\n" for line in new_text.splitlines())
    return f"--- a/{path}\n+++ b/{path}\n@@ @@\n{removed}{added}"


def note_approved(ctx: ToolContext, sensitive: tuple[str, ...]) -> None:
    """After an approved edit: its sensitive files as written, so no command's cleanup removes them."""
    if not sensitive or not ctx.approved_sensitive:
        return
    written: list[Path] = []
    for rel in sensitive:
        try:
            written.append(resolve_in_root(ctx.root, rel))
        except PathDenied:
            continue
    remember_approved(written)
