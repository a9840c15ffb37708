"""A rolling maintenance in the lab under probe flows, wave by wave (docs/maintain.md).

    python tests/bench/bench_maintain.py [--mode dual-arp|evpn-mh|both]
        [--action restart-routing|apply|reboot] [--plane N] [--role leaf|spine] [--keep]
        [--timers KEEPALIVE/HOLD] [--roce-mode lossless|lossy]

Brings the mode's lab up (prefix DPCTL_LAB_PREFIX, default ``dqb-``), deploys both planes,
then rolls ``--action`` over every selected switch, one wave at a time, each wave with probe
flows over every rail (both ways, 8 sub-flows each, 50 packets/s) running from before its
first drain to after its last gate. Prints per wave: its switches, seconds, longest gap,
lost, duplicates, reordered; and the totals. ``apply`` rolls the intent as deployed:
each switch is compared and committed (commit-confirm armed, then confirmed) only where it
differs; the drains, the health wait, the confirm step and the gates run for every switch.
``--timers 4/12`` makes it a real change: the lab is deployed with its intent, then the
intent with those BGP timers is rolled out, so every switch's commit changes it (under
commit-confirm, at its action step; each drain keeps what the switch runs), and after the
last wave every switch it took is checked to run the new intent (and, with ``--plane`` or
``--role``, every other to run the old one). ``--roce-mode lossy`` (or ``lossless``) rolls out
that RoCE mode instead or as well: on SONiC a change verify sees (PFC on every port), so the
gates and drains must judge each switch against the intent it runs; the lab's Linux has no
PFC, so there the two modes render the same (docs/intent.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controller import deployed
from controller.deploy import deploy
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import BgpTimers, load_intent
from controller.lab import down
from controller.lab.fabric import lab_dir
from controller.maintain.rollout import Event, start
from controller.maintain.steps import Context
from controller.maintain.waves import plan_waves
from tests.bench.labbench import deployed_lab, exit_on_sigterm
from tests.lab.rolling import flow_specs, probe_during

ROOT = Path(__file__).resolve().parents[2]


def run_mode(
    mode: str,
    action: str,
    plane: int | None,
    role: str | None,
    keep: bool,
    timers: str | None,
    roce_mode: str | None = None,
) -> bool:
    prefix = os.environ.setdefault("DPCTL_LAB_PREFIX", "dqb-")
    intent = ROOT / "inventory" / f"lab-{mode}.yaml"
    fabric = build_fabric(load_intent(intent))
    target = changed(fabric, timers, roce_mode)
    state_dir = lab_dir(fabric.intent.name)
    began = time.monotonic()
    ok = True
    try:
        reach = deployed_lab(fabric, state_dir, prefix)
        print(f"{mode}: lab up and deployed in {time.monotonic() - began:.0f} s", flush=True)
        ctx = Context(target, reach.access, reach.state, action, revert_in=900)
        waves = plan_waves(target, action, plane, role)  # type: ignore[arg-type]
        routes = [f"{f.src} -> {f.dst} {f.dst_ip}" for f in flow_specs(fabric)]
        print(
            f"{'wave':>4} {'switches':<28} {'s':>5} {'gap ms':>7} {'lost':>5} {'dup':>4} "
            f"{'reord':>5}  status",
            flush=True,
        )
        for index, wave in enumerate(waves, 1):
            t0 = time.monotonic()
            steps: list[str] = []
            rollout, probe = probe_during(
                state_dir, fabric, partial(start, ctx, [wave], timeline(steps))
            )
            seconds = time.monotonic() - t0
            ok = ok and rollout.status == "done" and probe["lost"] == probe["duplicates"] == 0
            print(
                f"{index:>4} {','.join(wave.switches):<28} {seconds:>5.0f} "
                f"{probe['max_gap_ms']:>7.0f} {probe['lost']:>5} {probe['duplicates']:>4} "
                f"{probe['reordered']:>5}  {rollout.status} {rollout.reason[:200]}",
                flush=True,
            )
            record = {k: v for k, v in probe.items() if k != "per_flow"}
            record["losses"] = losses(probe.get("per_flow", []), routes)
            record["steps"] = steps
            print("  " + json.dumps({"wave": index, "seconds": round(seconds), **record}))
            if rollout.status != "done":
                return False
        print(f"{mode} {action}: {len(waves)} waves in {time.monotonic() - began:.0f} s")
        if target is not fabric:
            rolled = {name for wave in waves for name in wave.switches}
            ok = runs_where_rolled(fabric, target, reach, rolled) and ok
        return ok
    finally:
        if not keep:
            down(state_dir, prefix=prefix)


def timeline(steps: list[str]) -> Event:
    """The rollout's events as wall-clock lines (``18:39:02 p1-g1-leaf2 undrain ok``), so a
    lost packet can be placed at the step it fell in (its time: its sequence number at the
    flows' 50 packets/s; ``gap_end`` is the end of the sub-flow's longest silence, not the
    loss's time)."""

    def tell(event: dict[str, object]) -> None:
        ended = f" {'ok' if event.get('ok') else 'failed'}" if event["event"] == "done" else ""
        stamp = time.strftime("%H:%M:%S")
        steps.append(f"{stamp} {event['switch']} {event['step']}{ended}")

    return tell


def changed(fabric: Fabric, timers: str | None, roce_mode: str | None = None) -> Fabric:
    """The fabric to roll out: the lab's, or with ``timers`` (KEEPALIVE/HOLD) its BGP timers
    and with ``roce_mode`` its RoCE mode."""
    update: dict[str, Any] = {}
    if timers is not None:
        keepalive, _, hold = timers.partition("/")
        update["bgp_timers"] = BgpTimers(keepalive=int(keepalive), hold=int(hold))
    if roce_mode is not None:
        update["roce"] = fabric.intent.roce.model_copy(update={"mode": roce_mode})
    return build_fabric(fabric.intent.model_copy(update=update)) if update else fabric


def runs_where_rolled(fabric: Fabric, target: Fabric, reach: Any, rolled: set[str]) -> bool:
    """Each switch the rollout took (``rolled``: all of them, or those of ``--plane`` and
    ``--role``) runs ``target`` and is recorded so; every other still runs ``fabric``, the
    intent it was deployed with (a dry-run deploy of that intent changes nothing there)."""
    ok = True
    for intent, names, what in (
        (target, rolled, "the new intent"),
        (fabric, set(target.switch_by_name) - rolled, "the intent it was deployed with"),
    ):
        if not names:
            continue
        found = deploy(intent, reach.access, reach.state, dry_run=True)
        outcomes = {n: o for n, o in found.items() if n in names}
        differ = sorted(n for n, o in outcomes.items() if not o.ok or o.changed)
        unrecorded = sorted(
            n for n in outcomes if deployed.intent_running(reach.state, n) != intent.intent
        )
        print(
            f"after the rollout: {len(outcomes) - len(differ)} of {len(outcomes)} switches run "
            f"{what}; differ: {differ or 'none'}; not recorded: {unrecorded or 'none'}"
        )
        ok = ok and not differ and not unrecorded
    return ok


def losses(per_flow: list[dict[str, Any]], routes: list[str]) -> list[dict[str, Any]]:
    """Each sub-flow that lost packets or went silent over 1 s: where (flow, sub-flow), its
    lost runs, the network's and the sender's share of its longest silence, and when that
    silence ended (UTC), to place it against the rollout's steps; with its flow's route and
    what the receiving socket dropped itself (buffer full: not the fabric's loss)."""
    found = []
    for index, flow in enumerate(per_flow):  # in the order of tests/lab/rolling.flow_specs
        for number, sub in enumerate(flow.get("per_subflow", [])):
            if not sub.get("lost") and float(sub.get("max_gap_ms", 0)) <= 1000:
                continue
            ended = float(sub.get("gap_end") or 0)
            found.append(
                {
                    "flow": index,
                    "route": routes[index] if index < len(routes) else None,
                    "receiver_dropped": flow.get("receiver_dropped"),
                    "subflow": number,
                    "lost": sub.get("lost"),
                    "lost_runs": sub.get("lost_runs"),
                    "network_gap_ms": sub.get("network_gap_ms"),
                    "sender_paused_ms": sub.get("sender_paused_ms"),
                    "gap_end": time.strftime("%H:%M:%S", time.gmtime(ended)) if ended else None,
                }
            )
    return found


def main() -> int:
    exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="both", choices=["dual-arp", "evpn-mh", "both"])
    ap.add_argument("--action", default="restart-routing")
    ap.add_argument("--plane", type=int, default=None)
    ap.add_argument("--role", default=None)
    ap.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    ap.add_argument("--timers", default=None, help="apply: roll out these BGP timers (4/12)")
    ap.add_argument("--roce-mode", default=None, choices=["lossless", "lossy"])
    args = ap.parse_args()
    if (args.timers or args.roce_mode) and args.action != "apply":
        ap.error("--timers and --roce-mode change the intent: they go with --action apply")
    modes = ["dual-arp", "evpn-mh"] if args.mode == "both" else [args.mode]
    results = [
        run_mode(m, args.action, args.plane, args.role, args.keep, args.timers, args.roce_mode)
        for m in modes
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
