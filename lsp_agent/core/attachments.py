"""What a queued message's attachments become in the prompt the model reads.

A front end attaches two kinds of thing: text it already holds (a selection, a note, a pasted log:
`{"type": "text", "text": ..., "name": ...}`) and a file of the workspace, by path (`{"type":
"file", "path": ...}`; the model reads it with read_file, under the usual path rules). Both are sent
as text after the message. Anything else (an image, a descriptor of an unknown kind, a malformed
one) cannot be sent to the model, and saying so is better than sending the message without it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_PATH_CHARS", "AttachmentRefused", "prompt_with_attachments"]

#: longest attached path taken (Linux's PATH_MAX)
MAX_PATH_CHARS = 4096


class AttachmentRefused(ValueError):
    """The queued message cannot be sent as it is; the message says why, for the user."""


def _name(raw: Any) -> str:
    # A name is shown on one line of the prompt: a line break in it would forge the next header.
    return " ".join(str(raw).split())[:200] if isinstance(raw, str) else ""


def _render(number: int, attachment: Any) -> str:
    if not isinstance(attachment, dict) or not isinstance(attachment.get("type"), str):
        raise AttachmentRefused(f"attachment {number} is not an object with a string `type`")
    kind = attachment["type"]
    if kind == "text":
        text = attachment.get("text")
        if not isinstance(text, str):
            raise AttachmentRefused(f"attachment {number} (text) has no string `text`")
        name = _name(attachment.get("name"))
        return f"[attachment {number}{': ' + name if name else ''}]\n{text}"
    if kind == "file":
        path = attachment.get("path")
        if not isinstance(path, str) or not path.strip() or "\x00" in path or "\n" in path \
                or len(path) > MAX_PATH_CHARS:
            raise AttachmentRefused(f"attachment {number} (file) needs a `path`: one line, at most "
                                    f"{MAX_PATH_CHARS} characters")
        return f"[attachment {number}: the file {path} — read it with read_file]"
    shown = _name(kind)[:40]
    raise AttachmentRefused(f"attachment {number} is of type {shown!r}; only `text` and `file` attachments "
                            "can be sent to the model")


def prompt_with_attachments(text: str, attachments: list[Any], max_chars: int) -> str:
    """The message followed by its attachments, each under a numbered header. AttachmentRefused when
    one cannot be sent or the whole is longer than `max_chars`."""
    if not attachments:
        return text
    blocks = [_render(n, a) for n, a in enumerate(attachments, start=1)]
    prompt = "\n\n".join([text.rstrip(), *blocks] if text.strip() else blocks)
    if len(prompt) > max_chars:
        raise AttachmentRefused(f"the message with its attachments is {len(prompt)} characters; at most "
                                f"{max_chars} can be sent")
    return prompt
