"""Write a set of generated files all-or-nothing.

Everything is rendered in memory first (so a generator error writes nothing); then each file
goes to a temporary name in the target folder and is renamed over the old one only after all
of them were written, so an interrupted run leaves the previous files in place.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath

from controller.errors import OutputError


def confined(out_dir: Path, name: str) -> Path:
    """``out_dir / name``, refusing any name that would land outside ``out_dir``."""
    rel = PurePosixPath(name)
    if (
        not name
        or rel.is_absolute()
        or any(part in ("..", ".", "") for part in name.split("/"))
        or "\\" in name
        or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name)
    ):
        raise OutputError(
            name, f"refusing to write {name!r}: not a plain relative path inside {out_dir}"
        )
    target = out_dir / rel
    root = out_dir.resolve()
    if not target.resolve().is_relative_to(root):
        raise OutputError(name, f"refusing to write {name!r}: it resolves outside {out_dir}")
    return target


def write_all(out_dir: Path, files: dict[str, bytes]) -> list[Path]:
    """Write ``files`` (relative path -> bytes) under ``out_dir``; nothing outside it."""
    targets = {name: confined(out_dir, name) for name in files}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            str(out_dir), f"cannot create the output folder ({exc.strerror})"
        ) from None
    staged: list[tuple[Path, Path]] = []
    try:
        for name, content in sorted(files.items()):
            target = targets[name]
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(
                dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
            )
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
            staged.append((Path(tmp_name), target))
    except OSError as exc:
        for staged_tmp, _ in staged:
            staged_tmp.unlink(missing_ok=True)
        raise OutputError(str(out_dir), f"cannot write generated files ({exc.strerror})") from None
    for tmp, target in staged:
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    return [target for _, target in staged]
