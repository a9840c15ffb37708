"""Write a set of generated files all-or-nothing.

Everything is rendered in memory first (so a generator error writes nothing); then each file
goes to a temporary name in the target folder and is renamed over the old one only after all
of them were written, so an interrupted run leaves the previous files in place.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from controller.errors import OutputError


def write_all(out_dir: Path, files: dict[str, bytes]) -> list[Path]:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            str(out_dir), f"cannot create the output folder ({exc.strerror})"
        ) from None
    staged: list[tuple[Path, Path]] = []
    try:
        for name, content in sorted(files.items()):
            target = out_dir / name
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
