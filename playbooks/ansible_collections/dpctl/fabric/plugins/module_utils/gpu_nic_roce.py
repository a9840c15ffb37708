"""RoCE host settings of a GPU NIC's ports: trust DSCP, PFC on the lossless priorities
(dpctl_gpu_nic).

The first of mlnx_qos, dcb (iproute2) and lldptool that supports a port sets it; a port no
tool supports is skipped with a message naming what was tried (never a failure: a server
without NIC QoS tooling still gets its bonds, addresses and routes).
"""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

Run = Any  # callable(argv, stdin=None) -> (rc, out, err)
Attempt = Any  # (run, port, roce, prios, check) -> (result or None, why not)


def _pfc_mask(prios: list[int]) -> str:
    return ",".join("1" if i in prios else "0" for i in range(8))


def _run_all(run: Run, cmds: list[list[str]], check: bool) -> None:
    if check:
        return
    for cmd in cmds:
        rc, _, err = run(cmd)
        if rc != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {err.strip()}")


def _mlnx_qos(
    run: Run, port: str, roce: dict[str, Any], prios: list[int], check: bool
) -> tuple[dict[str, Any] | None, str]:
    """mlnx_qos's default DSCP->priority map (DSCP >> 3) already puts DSCP 24-31 on 3 and
    32-39 on 4, as the switches do: trust and PFC are all it sets."""
    rc, out, err = run(["mlnx_qos", "-i", port])
    if rc != 0:
        return None, err.strip() or "no output"
    trust_ok = re.search(r"Priority trust state:\s*dscp", out) is not None
    enabled = re.search(r"enabled\s+((?:\d\s+){7}\d)", out)
    pfc_ok = enabled is not None and enabled.group(1).split() == _pfc_mask(prios).split(",")
    if trust_ok and pfc_ok:
        return {"port": port, "tool": "mlnx_qos", "changed": False}, ""
    cmd = ["mlnx_qos", "-i", port, "--trust", "dscp", "--pfc", _pfc_mask(prios)]
    _run_all(run, [cmd], check)
    return {"port": port, "tool": "mlnx_qos", "changed": True, "commands": [cmd]}, ""


def _dcb(
    run: Run, port: str, roce: dict[str, Any], prios: list[int], check: bool
) -> tuple[dict[str, Any] | None, str]:
    """`dcb` sets PFC and the DSCP app entries explicitly."""
    rc, out, err = run(["dcb", "-j", "pfc", "show", "dev", port])
    if rc != 0:
        return None, err.strip() or "not supported"
    data = json.loads(out or "{}")
    have = sorted(int(k) for k, v in data.get("prio_pfc", {}).items() if v)
    cmds: list[list[str]] = []
    if have != sorted(prios):
        flags = [f"{i}:{'on' if i in prios else 'off'}" for i in range(8)]
        cmds.append(["dcb", "pfc", "set", "dev", port, "prio-pfc", *flags])
    mapping = [f"{d}:{t}" for d, t in roce.get("dscp_to_prio", {}).items()]
    rc, out, _ = run(["dcb", "-j", "app", "show", "dev", port, "dscp-prio"])
    current = json.loads(out or "{}").get("dscp_prio", []) if rc == 0 else []
    have_map = {f"{e[0]}:{e[1]}" for e in current if isinstance(e, list) and len(e) == 2}
    if mapping and set(mapping) != have_map:
        cmds.append(["dcb", "app", "replace", "dev", port, "dscp-prio", *mapping])
    _run_all(run, cmds, check)
    return {"port": port, "tool": "dcb", "changed": bool(cmds), "commands": cmds}, ""


def _lldptool(
    run: Run, port: str, roce: dict[str, Any], prios: list[int], check: bool
) -> tuple[dict[str, Any] | None, str]:
    rc, out, err = run(["lldptool", "-t", "-i", port, "-V", "PFC", "-c", "enabled"])
    if rc != 0:
        return None, err.strip() or "not supported"
    want = ",".join(str(x) for x in prios) or "none"
    if f"enabled={want}" in out.replace(" ", ""):
        return {"port": port, "tool": "lldptool", "changed": False}, ""
    cmd = ["lldptool", "-T", "-i", port, "-V", "PFC", f"enabled={want}"]
    _run_all(run, [cmd], check)
    return {"port": port, "tool": "lldptool", "changed": True, "commands": [cmd]}, ""


TOOLS: tuple[tuple[str, Attempt], ...] = (
    ("mlnx_qos", _mlnx_qos),
    ("dcb", _dcb),
    ("lldptool", _lldptool),
)


def roce_port(run: Run, port: str, roce: dict[str, Any], check: bool) -> dict[str, Any]:
    """Trust DSCP and PFC on the lossless priorities with the first tool that supports the port."""
    prios = [int(x) for x in roce.get("pfc_priorities", [])]
    tried: list[str] = []
    for tool, attempt in TOOLS:
        if not shutil.which(tool):
            continue
        result, why_not = attempt(run, port, roce, prios, check)
        if result is not None:
            return result
        tried.append(f"{tool}: {why_not}")
    detail = "; ".join(tried) if tried else "none of mlnx_qos, dcb, lldptool is installed"
    return {
        "port": port,
        "tool": None,
        "changed": False,
        "skipped": f"RoCE host settings skipped on {port}: "
        f"no NIC QoS tooling supports it ({detail})",
    }
