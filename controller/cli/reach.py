"""Where the fabric is, decided at the edge: its embedded lab if that runs, else the devices
the intent's credentials reach. Only commands that talk to switches or servers import this
(it loads the lab's code)."""

from __future__ import annotations

from controller.access import FabricAccess
from controller.fabric_access import credentials_access
from controller.facts import Fabric
from controller.lab.access import lab_access
from controller.lab.fabric import lab_dir


def fabric_access(fabric: Fabric) -> FabricAccess:
    """The running lab of the fabric (``.lab/<name>`` or DPCTL_LAB_DIR), else the intent's
    credentials (a lab-only fabric with no lab is refused there)."""
    return lab_access(lab_dir(fabric.intent.name)) or credentials_access(fabric)
