"""One vtysh run, its JSON documents read one after the other."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def vtysh_documents(*commands: str) -> list[Any]:
    """The JSON document of each command from one vtysh run, up to the first command that
    gave none (a daemon that is not running prints an error instead)."""
    args = [arg for command in commands for arg in ("-c", command)]
    out = subprocess.run(["vtysh", *args], capture_output=True, text=True, check=False).stdout
    return json_documents(out or "")


def vtysh_json(*commands: str) -> list[Any] | None:
    """The JSON document of each command, from one vtysh run; None unless each command gave
    one."""
    docs = vtysh_documents(*commands)
    return docs if len(docs) == len(commands) else None


def json_documents(text: str) -> list[Any]:
    """The JSON documents in ``text`` one after the other (vtysh's output), up to the first
    that is not JSON (a daemon's error message)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return found
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return found
        found.append(value)
