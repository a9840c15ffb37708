"""Maintenance actions on a Linux + FRR switch, as commands the switch itself runs.

- restart-routing: with systemd, ``systemctl restart frr``; without (the lab's switches, FRR
  in a container), bgpd and bfdd get SIGTERM (bgpd withdraws its routes as it stops) and
  watchfrr, FRR's own supervisor, starts them again through ``watchfrr.sh``, whose
  ``daemon_start`` loads the daemon's configuration (``vtysh -b``): measured in the lab, bgpd
  ran again within 6 s and its sessions were up 7 s later (2026-12-06). zebra is not
  restarted: its routes stay in the kernel (``-K``) while the protocols come back.
- reboot: with systemd, ``systemctl reboot``; without, the stand-in restarts every FRR
  daemon (SIGTERM to zebra: watchfrr restarts the whole set). lldpd and sshd are not
  restarted (nothing supervises them in a namespace, and the session runs through sshd).
- upgrade: a Linux + FRR switch has no NOS image; refused, except where the access marks
  the switches as a lab (``optional_args["image_stand_in"]``), where it is the reboot
  stand-in, and says so.
"""

from __future__ import annotations

SYSTEMD = "[ -d /run/systemd/system ]"
RUN = "/run/frr"
WAIT_S = 90


def restart_daemons(daemons: tuple[str, ...]) -> str:
    """SIGTERM to each running daemon of ``daemons``, then wait (up to WAIT_S) until each
    runs again under a new PID; prints ``restarted`` or ``timeout``."""
    names = " ".join(daemons)
    return (
        f"old=''; for d in {names}; do p=$(cat {RUN}/$d.pid 2>/dev/null) && kill -0 $p "
        f'2>/dev/null && old="$old $d:$p" && kill -TERM $p; done; '
        f"for i in $(seq 1 {WAIT_S}); do sleep 1; ok=1; for e in $old; do d=${{e%%:*}}; "
        f"p=${{e#*:}}; n=$(cat {RUN}/$d.pid 2>/dev/null); "
        f'{{ [ -n "$n" ] && [ "$n" != "$p" ] && kill -0 $n 2>/dev/null; }} || ok=0; done; '
        "[ $ok = 1 ] && echo restarted && exit 0; done; echo timeout"
    )


def restart_routing() -> str:
    return f"if {SYSTEMD}; then systemctl restart frr && echo restarted; else " + (
        restart_daemons(("bgpd", "bfdd")) + "; fi"
    )


def reboot() -> str:
    return (
        f"if {SYSTEMD}; then (sleep 2; systemctl reboot) >/dev/null 2>&1 </dev/null & "
        "echo restarted; else " + restart_daemons(("zebra",)) + "; fi"
    )
