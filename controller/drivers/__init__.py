"""What every dpctl platform driver shares: the contract (NAPALM's ``NetworkDriver`` plus
dpctl's getters), its result types, the parsers of FRR's and lldpd's JSON, the bundle of a
device's files, and the base of the SONiC-family drivers. Each platform's own driver lives in
its folder, ``controller/platforms/<name>/driver.py``."""
