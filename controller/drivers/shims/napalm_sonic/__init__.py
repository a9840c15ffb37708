"""napalm.get_network_driver("sonic") imports this module: it must hold only the driver."""

from controller.drivers.sonic import SonicDriver

__all__ = ["SonicDriver"]
