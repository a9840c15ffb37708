"""Small stdlib-only programs dpctl copies to switches and servers and runs there: the
ARP-to-host agent (Linux + FRR leaves; packed into one zipapp by pack.py) and the probe agent
(servers, for the traffic check and the failure matrix; the lab's server namespaces run the
same file)."""

from pathlib import Path

PROBE_AGENT = Path(__file__).with_name("probe_agent.py")
