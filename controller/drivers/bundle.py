"""A device's configuration as one text: the rendered files of the device, in order.

NAPALM's contract passes one configuration string to load_replace_candidate. A dpctl
configuration is several files (frr.conf, config_db.json, ...), so they travel as a bundle:

    #### dpctl-file: frr.conf
    <text>
    #### dpctl-file: ip.batch
    <text>

Plain (unbundled) text is taken as the platform's single main file.
"""

from __future__ import annotations

MARKER = "#### dpctl-file: "


class BundleError(ValueError):
    """The text is not a valid bundle (a file name repeated or empty)."""


def pack(files: dict[str, str]) -> str:
    parts = []
    for name in sorted(files):
        text = files[name]
        parts.append(f"{MARKER}{name}\n{text}" + ("" if text.endswith("\n") or not text else "\n"))
    return "".join(parts)


def unpack(text: str, default_name: str) -> dict[str, str]:
    if not text.startswith(MARKER):
        return {default_name: text}
    files: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(MARKER):
            if name is not None:
                files[name] = "".join(lines)
            name = line[len(MARKER) :].strip()
            if not name or name in files:
                raise BundleError(f"bad or repeated file name {name!r} in bundle")
            lines = []
        else:
            lines.append(line)
    if name is not None:
        files[name] = "".join(lines)
    return files
