"""Base model for every record that crosses a boundary (events, protocol, store).

Field names are snake_case in Python and camelCase on the wire, with the
`ID` suffix spelled as the wire protocol spells it (`sessionID`, `messageID`, `partID`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


def wire_alias(name: str) -> str:
    camel = to_camel(name)
    return camel[:-2] + "ID" if camel.endswith("Id") else camel


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=wire_alias, populate_by_name=True, extra="forbid")

    def wire(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def wire_json(self) -> str:
        """`wire()` as compact JSON, serialized by pydantic-core in one pass (no dict in between)."""
        return self.model_dump_json(by_alias=True, exclude_none=True)
