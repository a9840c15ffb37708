"""Running containerlab itself (`dpctl lab up --runtime containerlab`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from controller.clab.kinds import ClabError


def deploy(topology_file: Path) -> str:
    """Run `containerlab deploy`; an error naming what is missing when it cannot run here."""
    binary = shutil.which("containerlab") or shutil.which("clab")
    if binary is None:
        raise ClabError(
            "--runtime containerlab",
            "containerlab is not installed (it also needs a Docker engine); use the embedded "
            "lab (`dpctl lab up`) or install containerlab where Docker runs",
        )
    result = subprocess.run(
        [binary, "deploy", "--reconfigure", "-t", str(topology_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ClabError(
            str(topology_file), f"containerlab deploy failed: {result.stderr.strip()[-400:]}"
        )
    return result.stdout
