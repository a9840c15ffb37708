"""Lost segment EVIs (EVPN-MH, FRR 8.4): when bgpd (re)starts or its instance is created anew,
zebra replays each local segment with its EVIs before the VNIs, and a bgpd that does not know
the VNI yet drops the EVI ("Failed to associate VNI ... VNI not present") for good: the
segment then has no local EVI in bgpd, sends no EAD-per-EVI route, and the pair never takes
this leaf as its peer (both leaves designated forwarder). Whether bgpd reads its `vni` block
or the replay first is timing (FRRouting/frr#22553 changed the order upstream). So a thread of
its own (EviHeal) compares zebra's local segment EVIs with bgpd's every HEAL_CHECK_S; an EVI
bgpd lacks while it knows the VNI from the kernel, still so HEAL_CONFIRM_S later, makes it
re-apply that segment's id on its bond (`no evpn mh es-id K`, `evpn mh es-id K`): zebra
removes the segment and adds it again with its EVIs, which bgpd now takes. The running
config is the same afterwards. Each heal is written to the agent's log.
"""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Any

from . import journal, vtysh

HEAL_CHECK_S = 30.0
"""How often EviHeal compares zebra's and bgpd's segment EVIs: one vtysh with three commands,
about 0.6 s of CPU in the lab's emulated guest."""
HEAL_CONFIRM_S = 10.0
"""A lost EVI must still be lost this much later before the agent acts: bgpd that has just
started learns its segments and VNIs over a few seconds."""
HEAL_AGAIN_S = 120.0
"""A segment whose id was re-applied is not re-applied again before this: if bgpd still
lacks its EVI, something else is wrong, and the agent's log says so once per interval
instead of churning the segment every 40 s."""


HEAL_COMMANDS = (
    "show evpn es-evi json",
    "show bgp l2vpn evpn es-evi json",
    "show bgp l2vpn evpn vni json",
)


def lost_segment_evis(
    zebra_evis: Any, bgp_evis: Any, bgp_vnis: Any, esis: set[str]
) -> set[tuple[str, int]]:
    """(ESI, VNI) of this leaf's segments that zebra holds as local and bgpd does not, where
    bgpd knows the VNI from the kernel (``show bgp l2vpn evpn vni json``: ``inKernel``), so
    it will not take the EVI by itself any more (the three are HEAL_COMMANDS' answers)."""
    if not (isinstance(zebra_evis, list) and isinstance(bgp_evis, list)):
        return set()
    if not isinstance(bgp_vnis, dict):
        return set()
    known = {
        int(vni)
        for vni, info in bgp_vnis.items()
        if vni.isdigit() and isinstance(info, dict) and info.get("inKernel") == "True"
    }
    local_in_bgp = {
        (str(e.get("esi")), e.get("vni"))
        for e in bgp_evis
        if isinstance(e, dict) and "local" in (e.get("type") or [])
    }
    return {
        (str(e["esi"]), int(e["vni"]))
        for e in zebra_evis
        if isinstance(e, dict)
        and str(e.get("esi")) in esis
        and isinstance(e.get("vni"), int)
        and "local" in (e.get("type") or [])
        and e["vni"] in known
        and (str(e["esi"]), e["vni"]) not in local_in_bgp
    }


def reapply_es_ids(bonds: list[tuple[str, int]]) -> tuple[int, str]:
    """Remove and add again each (bond, es-id) in one vtysh run: (exit code, its output)."""
    args = ["-c", "configure terminal"]
    for bond, es_id in bonds:
        args += ["-c", f"interface {bond}", "-c", f"no evpn mh es-id {es_id}"]
        args += ["-c", f"evpn mh es-id {es_id}", "-c", "exit"]
    done = subprocess.run(["vtysh", *args], capture_output=True, text=True, check=False)
    return done.returncode, (done.stdout + done.stderr).strip()


class EviHeal:
    """Re-applies the id of each segment whose EVI bgpd lost (see the module's docstring),
    in a thread of its own: a vtysh is seconds in a loaded guest, and a pass must not wait."""

    def __init__(self, segments: dict[str, Any]) -> None:
        self.bond_of = {
            str(seg["esi"]): (bond, int(seg["es_id"]))
            for bond, seg in sorted(segments.items())
            if seg.get("esi") and seg.get("es_id")
        }
        self.suspect: set[tuple[str, int]] = set()
        self.healed_at: dict[str, float] = {}
        """ESI -> when its id was last re-applied (monotonic clock)."""

    def check(self, now: float | None = None) -> list[str]:
        """One look; the bonds whose id it re-applied (an EVI lost at two looks in a row, and
        not re-applied within HEAL_AGAIN_S)."""
        now = time.monotonic() if now is None else now
        docs = vtysh.vtysh_json(*HEAL_COMMANDS)
        if docs is None:  # bgpd or zebra not answering: start over
            self.suspect = set()
            return []
        lost = lost_segment_evis(docs[0], docs[1], docs[2], set(self.bond_of))
        confirmed, self.suspect = lost & self.suspect, lost - self.suspect
        recent = {
            evi
            for evi in confirmed
            if now - self.healed_at.get(evi[0], -HEAL_AGAIN_S) < HEAL_AGAIN_S
        }
        if recent:
            journal.log(f"still no local EVI after a heal: {sorted(recent)}")
        confirmed -= recent
        if not confirmed:
            return []
        for esi, _vni in confirmed:
            self.healed_at[esi] = now
        bonds = sorted({self.bond_of[esi] for esi, _vni in confirmed})
        rc, out = reapply_es_ids(bonds)
        evis = ", ".join(f"{esi} VNI {vni}" for esi, vni in sorted(confirmed))
        names = " ".join(bond for bond, _ in bonds)
        journal.log(
            f"healed {names}: bgpd had no local EVI for {evis} "
            f"(FRR 8.4 replay race); re-applied es-id, vtysh rc={rc} {out[-200:]}"
        )
        return [bond for bond, _ in bonds]

    def run(self) -> None:
        while True:
            self.check()
            time.sleep(HEAL_CONFIRM_S if self.suspect else HEAL_CHECK_S)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="evi-heal", daemon=True)
        thread.start()
        return thread
