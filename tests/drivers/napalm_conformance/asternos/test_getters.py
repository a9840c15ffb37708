"""NAPALM's own getter tests (napalm.base.test.getters.BaseTestGetters), unchanged, on the
asternos driver."""

import pytest
from napalm.base.test.getters import BaseTestGetters


@pytest.mark.usefixtures("set_device_parameters")
class TestGetter(BaseTestGetters):  # type: ignore[misc]
    """Every NAPALM getter test; a getter the platform does not answer is skipped (its
    NotImplementedError says why: docs/platforms/napalm-getters.md)."""
