"""Lab runtime: namespaces + veth cables + FRR + sshd per node, on the first substrate this
machine can run (natively, or in a KVM, User-Mode Linux or QEMU TCG guest: ``substrate``).

Public API::

    state = up(topology, state_dir, prefix="dpl-")
    with LabSession.open(state_dir) as s:
        s.run("leaf1", "vtysh -c 'show version'")
        s.wait_bgp_established("leaf1", 2, timeout=60)
        run_probe(s, "srv1", "srv2", "10.0.2.2")
    status(state_dir); down(state_dir)
"""

from controller.lab.errors import (
    GuestBootError,
    LabCommandError,
    LabError,
    LabSetupError,
    LabStateError,
    LabTimeoutError,
    LabTopologyError,
)
from controller.lab.probe import (
    FlowSpec,
    run_flows,
    run_probe,
    stop_probe,
    wait_probes_flowing,
)
from controller.lab.runtime import DEFAULT_PREFIX, down, status, up
from controller.lab.session import LabSession
from controller.lab.state import LabState, NodeState, load_state
from controller.lab.topology import LabCable, LabNode, LabTopology

__all__ = [
    "DEFAULT_PREFIX",
    "FlowSpec",
    "GuestBootError",
    "LabCable",
    "LabCommandError",
    "LabError",
    "LabNode",
    "LabSession",
    "LabSetupError",
    "LabState",
    "LabStateError",
    "LabTimeoutError",
    "LabTopology",
    "LabTopologyError",
    "NodeState",
    "down",
    "load_state",
    "run_flows",
    "run_probe",
    "status",
    "stop_probe",
    "up",
    "wait_probes_flowing",
]
