"""napalm.get_network_driver("asternos") imports this module: it must hold only the driver."""

from controller.drivers.asternos import AsterNOSDriver

__all__ = ["AsterNOSDriver"]
