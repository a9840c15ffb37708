"""Cross-field rules of the intent written as JSON Schema, so that ``dpctl schema`` says what
the loader enforces (tests/unit/test_schema_loader_agree.py)."""

from __future__ import annotations

from typing import Any


def hold_covers_keepalives() -> list[Any]:
    """BgpTimers' cross-field rule (hold >= 3 x keepalive, the defaults included) as JSON
    Schema: one if/then per keepalive value that raises the hold's minimum."""
    rules: list[Any] = [
        {  # keepalive left at its default 3 s
            "if": {"not": {"required": ["keepalive"]}},
            "then": {"properties": {"hold": {"minimum": 9}}},
        }
    ]
    for keepalive in range(2, 61):
        then: dict[str, Any] = {"properties": {"hold": {"minimum": 3 * keepalive}}}
        if 3 * keepalive > 9:  # the default hold (9 s) is too short: the hold must be given
            then["required"] = ["hold"]
        rules.append(
            {
                "if": {
                    "required": ["keepalive"],
                    "properties": {"keepalive": {"type": "integer", "minimum": keepalive}},
                },
                "then": then,
            }
        )
    return rules
