"""action=configure of dpctl_gpu_nic, and the boot-time applier (``--apply-persistent``).

Only the commands a NIC's plan needs run (one `ip -batch` and one `tc -batch` per NIC), so a
converged server reports changed=false; check mode reports them and runs none. With a config
root the persistent files are written first and what is applied is read back from them, so
the runtime state is exactly what the next boot builds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from typing import Any

from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_netlink import (
    INDEPENDENT,
    lacp_control_text,
    read_coupled_control,
    set_coupled_control,
)
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_persist import (
    EXTRAS,
    params_from_persistent,
    persist,
    read_persistent,
    render_persistent,
)
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_plan import plan_nic
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_roce import roce_port
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_state import read_state

Run = Any  # callable(argv, stdin=None) -> (rc, out, err)
APPLY_SETTLE_S = 10.0
"""How long configure waits for what it applied to read back (a started keep-alive shows as
`ping` only once setsid's child has exec'd: 0.2 s was not always enough on a loaded server)."""


def networkd_runs(root: str) -> bool:
    """systemd-networkd manages this server's links (then it applies the files itself)."""
    return (
        os.path.realpath(root) == "/"
        and os.path.isdir("/run/systemd/netif")
        and shutil.which("networkctl") is not None
    )


def networkd_reload(run: Run, bonds: list[str]) -> None:
    for argv in (["networkctl", "reload"], ["networkctl", "reconfigure", *bonds]):
        rc, _, err = run(argv)
        if rc != 0:
            raise RuntimeError(f"{' '.join(argv)}: {err.strip()}")


def apply_persistent(
    run: Run, root: str, control: Any = read_coupled_control, set_control: Any = None
) -> dict[str, Any]:
    """What a boot does: the persistent files, and nothing else, programmed into the kernel
    (networkd reads its own files when it runs; the extras are applied here in both cases).

    networkd has no setting for LACP independent control and creates the bonds before this
    runs, so a LACP bond that exists with coupled control is taken down, set and brought up
    here (at boot, before any workload); configure then restores what going down removed
    (routes through the bond)."""
    files = read_persistent(root)
    if EXTRAS not in files:
        raise RuntimeError(f"no persistent GPU NIC configuration under {root}")
    p = params_from_persistent(files)
    if networkd_runs(root):
        networkd_reload(run, [n["bond"] for n in p["nics"]])
    coupled = read_state(run, p["nics"], control)["coupled"]
    for bond in sorted(b for b, value in coupled.items() if value == 1):
        bounce_independent(run, bond, set_control or set_coupled_control)
    return configure(run, p, check=False, control=control, set_control=set_control)


def bounce_independent(run: Run, bond: str, set_control: Any) -> None:
    """Down, coupled_control 0, up: what changing the control of an existing bond takes."""
    _link_set(run, bond, "down")
    set_control(bond)
    _link_set(run, bond, "up")


def _link_set(run: Run, link: str, state: str) -> None:
    rc, _, err = run(["ip", "link", "set", link, state])
    if rc != 0:
        raise RuntimeError(f"ip link set {link} {state}: {err.strip()}")


def apply_plan(run: Run, bond: str, plan: dict[str, Any], set_control: Any = None) -> None:
    cut = plan.get("independent_after")
    batches = [plan["ip"]] if cut is None else [plan["ip"][:cut], plan["ip"][cut:]]
    for number, batch in enumerate(batches):
        if number == 1:  # the bond was just created, still down
            (set_control or set_coupled_control)(bond)
        if not batch:
            continue
        rc, _, err = run(["ip", "-batch", "-"], "\n".join(batch) + "\n")
        if rc != 0:
            raise RuntimeError(f"ip -batch failed: {err.strip()}")
    if plan["tc"]:
        rc, _, err = run(["tc", "-batch", "-"], "\n".join(plan["tc"]) + "\n")
        if rc != 0:
            raise RuntimeError(f"tc -batch failed: {err.strip()}")
    if plan["ping"]:
        subprocess.Popen(
            ["setsid", "-f", *plan["ping"]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        ).wait()


def wait_applied(
    run: Run,
    p: dict[str, Any],
    sleep: Any = time.sleep,
    clock: Any = time.monotonic,
    control: Any = read_coupled_control,
) -> dict[str, list[str]]:
    """What is still not as intended after applying, once it reads back or after
    APPLY_SETTLE_S (then the leftovers, an error); nothing is applied again meanwhile."""
    deadline = clock() + APPLY_SETTLE_S
    while True:
        sleep(0.2)
        state = read_state(run, p["nics"], control)
        left = {n["bond"]: plan_nic(state, n, p)["why"] for n in p["nics"]}
        left = {b: w for b, w in left.items() if w}
        if not left or clock() >= deadline:
            return left


def configure(
    run: Run,
    p: dict[str, Any],
    check: bool,
    root: str | None = None,
    control: Any = read_coupled_control,
    set_control: Any = None,
) -> dict[str, Any]:
    """With ``root``, the persistent files are written first and what is applied is read
    back from them (so the runtime state is exactly what the next boot will build).

    A LACP bond this creates gets independent control while it is still down; a running
    one keeps what it has (changing it takes the bond down) and is reported, to change at
    the next boot (``apply_persistent``)."""
    persisted: list[str] = []
    if root is not None:
        persisted = persist(root, render_persistent(p), check)
        if not check:
            if persisted and networkd_runs(root):
                networkd_reload(run, [n["bond"] for n in p["nics"]])
            p = {**p, **params_from_persistent(read_persistent(root))}
    state = read_state(run, p["nics"], control)
    plans = {nic["bond"]: plan_nic(state, nic, p) for nic in p["nics"]}
    changed = any(pl["why"] for pl in plans.values())
    lacp = _lacp_report(plans, state["coupled"])
    if not check:
        for bond, plan in plans.items():
            apply_plan(run, bond, plan, set_control)
        if changed:
            left = wait_applied(run, p, control=control)
            if left:
                raise RuntimeError(f"did not converge: {json.dumps(left, sort_keys=True)}")
            lacp = {bond: lacp_control_text(control(bond)) for bond in lacp}
    roce_results = _roce(run, p, check)
    changed = changed or bool(persisted) or any(r["changed"] for r in roce_results)
    return {
        "changed": changed,
        "persistent": persisted,
        "nics": {b: {"commands": pl["ip"] + pl["tc"], "why": pl["why"]} for b, pl in plans.items()},
        "keepalives_started": [" ".join(pl["ping"]) for pl in plans.values() if pl["ping"]],
        "roce": roce_results,
        "roce_skipped": [r["skipped"] for r in roce_results if r.get("skipped")],
        "lacp_control": lacp,
    }


def _lacp_report(plans: dict[str, dict[str, Any]], coupled: dict[str, Any]) -> dict[str, str]:
    """Per LACP bond, its control: independent for the bonds this run creates."""
    return {
        bond: f"{INDEPENDENT} (on creation)"
        if pl["independent_after"] is not None
        else lacp_control_text(coupled.get(bond))
        for bond, pl in plans.items()
        if pl["independent_after"] is not None or bond in coupled
    }


def _roce(run: Run, p: dict[str, Any], check: bool) -> list[dict[str, Any]]:
    roce = p.get("roce") or {}
    if not roce.get("enabled"):
        return []
    return [roce_port(run, port, roce, check) for nic in p["nics"] for port in nic["ports"]]
