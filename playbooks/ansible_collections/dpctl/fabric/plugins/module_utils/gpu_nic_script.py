"""dpctl_gpu_nic run as a script, without Ansible: its exit status is the interface.

- ``dpctl_gpu_nic.py --apply-persistent ROOT``: the boot-time applier (the unit's ExecStart
  on a server; run by hand, or by the lab, where networkd does not run); prints what it
  changed as JSON;
- ``dpctl_gpu_nic.py --lacp-independent BOND...`` (each bond down): independent LACP control
  on the bonds, one line per bond; the lab's server images run it between creating their
  bonds and bringing them up.

Here and not in the module: a module reports through exit_json/fail_json (Ansible's
validate-modules refuses sys.exit in a module); these entry points exit with a status.
"""

from __future__ import annotations

import json
import sys

from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_apply import (
    apply_persistent,
)
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_netlink import (
    lacp_independent_main,
)
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_state import run_cmd


def boot_main(argv: list[str]) -> int:
    """`dpctl_gpu_nic.py --apply-persistent ROOT`: the boot-time applier."""
    try:
        result = apply_persistent(run_cmd, argv[0] if argv else "/")
    except (RuntimeError, ValueError, OSError, KeyError) as exc:
        print(f"dpctl-gpu-nic: {exc}", file=sys.stderr)
        return 1
    keys = ("changed", "nics", "lacp_control")
    print(json.dumps({key: result[key] for key in keys}, sort_keys=True))
    return 0


def script_main(argv: list[str]) -> None:
    """Run the script mode ``argv`` names and exit with its status; return when it names
    none (the module runs under Ansible)."""
    if len(argv) > 1 and argv[1] == "--apply-persistent":
        sys.exit(boot_main(argv[2:]))
    if len(argv) > 1 and argv[1] == "--lacp-independent":
        sys.exit(lacp_independent_main(argv[2:]))
