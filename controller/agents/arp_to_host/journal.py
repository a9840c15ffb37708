"""The agent's log: its stdout (the log file beside it) and the switch's syslog."""

from __future__ import annotations

import syslog
import time

SYSLOG_IDENT = "dpctl-arp-to-host"
"""The agent's name in the switch's syslog (the program field)."""


def log(text: str) -> None:
    """One line of the agent's log: its stdout (the log file beside it, with the time) and the
    switch's syslog, where FRR's own messages go: an operator, and the failure matrix, read
    the gate, carrier and heal events in one timeline with bgpd's and zebra's. Without a
    syslog daemon the C library drops the message, and the stdout line remains."""
    print(f"{time.time():.3f} {text}", flush=True)
    syslog.syslog(syslog.LOG_INFO, text)
