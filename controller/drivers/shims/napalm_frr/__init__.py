"""napalm.get_network_driver("frr") imports this module: it must hold only the driver."""

from controller.drivers.frr import FrrDriver

__all__ = ["FrrDriver"]
