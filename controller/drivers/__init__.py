"""NAPALM drivers for the platforms dpctl deploys to: frr (Linux + FRR), sonic and asternos.

nornir_napalm finds a driver by platform name through ``napalm.get_network_driver``, which
imports ``napalm_<platform>``; the shims in ``drivers/shims/`` (installed as top-level
``napalm_frr``, ``napalm_sonic``, ``napalm_asternos``) re-export the driver classes only.
"""
