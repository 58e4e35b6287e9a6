"""An ACP prompt (content blocks) as the one text a generation starts from."""

from __future__ import annotations

from typing import Any

from acp import RequestError


def prompt_text(blocks: list[Any]) -> str:
    """Text blocks as they are; an embedded resource (the client's context) as a fenced block under its
    URI; a resource link as a reference the model can read with its tools. Images and audio are not
    advertised in `promptCapabilities`, so they are refused rather than dropped."""
    out: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            out.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is None:
                raise RequestError.invalid_params({"kind": "invalid_params",
                                                   "message": f"binary resource {resource.uri} is not supported"})
            out.append(f"Context from {resource.uri}:\n```\n{text}\n```")
        elif kind == "resource_link":
            out.append(f"(see {block.uri})")
        else:
            raise RequestError.invalid_params({"kind": "invalid_params",
                                               "message": f"prompt blocks of type {kind!r} are not supported"})
    return "\n\n".join(out)
