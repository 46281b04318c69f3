"""The values JSON carries, as types: what the two edges (the journal, the result document) read
and write, and what a typed model keeps of a JSON object it does not interpret."""

from __future__ import annotations

from typing import TypeAlias

# What other modules use; the rest is this module's own.
__all__ = ["JSONObject", "JSONValue"]

JSONScalar: TypeAlias = None | bool | int | float | str
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]
