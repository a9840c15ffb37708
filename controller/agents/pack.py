"""The ARP-to-host agent (the package ``controller.agents.arp_to_host``) as one zipapp.

A switch gets one file, ``python3 arp_to_host.pyz CONFIG.json`` runs it (Python runs a zip
with a ``__main__.py`` at its root: the format of the standard ``zipapp`` module, PEP 441),
and the FRR driver stores the archive's SHA-256 with the applied config, so a dpctl with
other agent code restarts the agent. That digest must change exactly when the code does, on
any machine: ``zipapp.create_archive`` stamps each member with its file's mtime, so the
archive is written here with ``zipfile`` and fixed metadata instead: members sorted by name,
the 1980-01-01 timestamp, mode 0644, stored without compression (a deflate stream may differ
between zlib builds). Only the package's ``.py`` files go in, read as bytes.
"""

from __future__ import annotations

import io
import zipfile
from functools import lru_cache
from importlib import resources

PACKAGE = "arp_to_host"
MAIN = b"import sys\n\nfrom arp_to_host.main import main\n\nmain(sys.argv[1])\n"
"""The archive's ``__main__.py``: the agent's loop with the config path it is given."""
EPOCH = (1980, 1, 1, 0, 0, 0)
"""The earliest timestamp a zip member can carry."""


def agent_files() -> dict[str, bytes]:
    """The agent package's modules: path in the archive -> contents."""
    root = resources.files("controller.agents").joinpath(PACKAGE)
    return {
        f"{PACKAGE}/{item.name}": item.read_bytes()
        for item in root.iterdir()
        if item.name.endswith(".py") and item.is_file()
    }


def build_archive(files: dict[str, bytes]) -> bytes:
    """The zipapp of ``files`` (plus ``__main__.py``): the same bytes for the same files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in sorted({**files, "__main__.py": MAIN}.items()):
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.external_attr = 0o100644 << 16
            info.create_system = 3  # Unix: what external_attr means, on any build host
            archive.writestr(info, data)
    return buffer.getvalue()


@lru_cache(maxsize=1)
def agent_archive() -> bytes:
    """The agent as shipped (built once per process)."""
    return build_archive(agent_files())
