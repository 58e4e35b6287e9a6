"""The boundary between pygls' cattrs world and our pydantic models.

pygls structures the params of methods lsprotocol does not know into namedtuples (renaming keys
that are not identifiers). Our converter keeps them as the JSON the client sent, and `to_plain`
turns whatever arrives (dicts, namedtuples, attrs objects) into plain JSON values, so every
custom method is validated by exactly one pydantic model.
"""

from __future__ import annotations

import enum
from functools import cache
from typing import Any, TypeVar

import attrs
import cattrs
from lsprotocol import converters
from pydantic import BaseModel, ValidationError
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter

from lsp_agent.protocol.errors import invalid_params

ModelT = TypeVar("ModelT", bound=BaseModel)


def make_converter() -> cattrs.Converter:
    """pygls' converter, except that unknown methods keep their params/result as raw JSON."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        # Params/result may be omitted on the wire; unknown top-level keys are dropped.
        names = [f.name for f in attrs.fields(cls)]
        return cls(**{name: obj.get(name) for name in names})

    for message in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(message, keep)
    return converter


@cache
def _lsp_converter() -> cattrs.Converter:
    converter: cattrs.Converter = converters.get_converter()
    return converter


def to_plain(obj: Any) -> Any:
    """Plain JSON values (dict/list/str/int/float/bool/None) from whatever pygls handed over."""
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):  # pygls' namedtuple params
        return to_plain(obj._asdict())
    if isinstance(obj, list | tuple):
        return [to_plain(v) for v in obj]
    if attrs.has(type(obj)):
        return to_plain(_lsp_converter().unstructure(obj))
    if isinstance(obj, enum.Enum):
        return to_plain(obj.value)
    return obj


def parse(model: type[ModelT], raw: Any, method: str) -> ModelT:
    """Validate one request's params; a failure becomes InvalidParams naming the field.
    Omitted params (null) mean "all defaults"."""
    plain = to_plain(raw)
    try:
        return model.model_validate({} if plain is None else plain)
    except ValidationError as exc:
        raise invalid_params(exc, method) from None
