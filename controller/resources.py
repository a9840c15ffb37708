"""Where dpctl's data folders are: in an installed wheel or in a source checkout.

``templates/`` and ``playbooks/`` live at the top of the repository; a wheel ships them as
package data inside the package (``controller/templates``, ``controller/playbooks``, mapped
in pyproject.toml). The installed copy wins; a checkout (editable install, PYTHONPATH) uses
the top-level folders.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder ``name`` (templates, playbooks) of this installation."""
    installed = PACKAGE / name
    if installed.is_dir():
        return installed
    return PACKAGE.parent / name


def templates_dir() -> Path:
    """The Jinja2 templates' root (``DPCTL_TEMPLATES`` overrides it, for template work)."""
    return Path(os.environ.get("DPCTL_TEMPLATES", "") or data_dir("templates"))
