"""Where dpctl's data folders are: in an installed wheel or in a source checkout.

``templates/`` and ``playbooks/`` live at the top of the repository; a wheel ships them as
package data inside the package (``controller/templates``, ``controller/playbooks``, mapped
in pyproject.toml). The installed copy wins; a checkout (editable install, PYTHONPATH) uses
the top-level folders.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent
COLLECTION = "dpctl.fabric"
"""dpctl's Ansible collection: ``playbooks/ansible_collections/dpctl/fabric`` (playbooks/ is
its collections path; docs/hosts-ansible.md)."""


def data_dir(name: str) -> Path:
    """The folder ``name`` (templates, playbooks) of this installation."""
    installed = PACKAGE / name
    if installed.is_dir():
        return installed
    return PACKAGE.parent / name


def templates_dir() -> Path:
    """The Jinja2 templates' root (``DPCTL_TEMPLATES`` overrides it, for template work)."""
    return Path(os.environ.get("DPCTL_TEMPLATES", "") or data_dir("templates"))


def collections_path() -> Path:
    """Ansible's collections path holding dpctl's collection (ANSIBLE_COLLECTIONS_PATH)."""
    return data_dir("playbooks")


def collection_dir() -> Path:
    """The collection's root (galaxy.yml, plugins/, roles/, playbooks/)."""
    return collections_path().joinpath("ansible_collections", *COLLECTION.split("."))


def collection_python(name: str) -> ModuleType:
    """A Python file of the collection (``plugins.modules.dpctl_gpu_nic``) imported under the
    name AnsiballZ gives it on a server (``ansible_collections.dpctl.fabric.<name>``): the
    collections path goes on sys.path (once, at the end), so the modules' imports of their
    module_utils resolve as they do there."""
    root = str(collections_path())
    if root not in sys.path:
        sys.path.append(root)
    return importlib.import_module(f"ansible_collections.{COLLECTION}.{name}")
