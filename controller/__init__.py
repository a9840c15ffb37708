"""dpctl: network automation controller for dual-plane, rail-optimized GPU fabrics."""

__version__ = "0.1.0"
