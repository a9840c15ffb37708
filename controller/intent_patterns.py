"""The regular expressions of the intent: one text each, used by the loader and by the schema.

Every pattern is anchored ``^...$(?!\\n)``: JSON Schema patterns are ECMA-262 (there ``$`` is
the end of the text), while Python's ``re`` (jsonschema, pydantic's python-re engine) lets
``$`` match before a final line break, so ``"admin\\n"`` would pass ``^[a-z]+$``. The
lookahead closes that gap the same way in both dialects, so an editor, a CI job running
jsonschema and ``load_intent`` draw the same line.
"""

from __future__ import annotations


def anchored(body: str) -> str:
    """^body$ for ECMA-262 and Python alike (see the module docstring)."""
    return f"^{body}$(?!\\n)"


OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# The values an octet may take when only its top ``bits`` bits belong to the network.
_EVEN = r"(?:25[024]|2[0-4][02468]|1[0-9][02468]|[1-9]?[02468])"
_FOURS = (  # multiples of 4, told by their last two digits
    r"(?:252|2(?:[024][048]|[13][26])|1(?:[02468][048]|[13579][26])"
    r"|[2468][048]|[13579][26]|[048])"
)


def _network_octet(bits: int) -> str:
    """An octet whose low 8 - bits bits are zero (multiples of 2**(8 - bits))."""
    if bits == 7:
        return _EVEN
    if bits == 6:
        return _FOURS
    values = range(0, 256, 256 >> bits)
    return "(?:" + "|".join(str(v) for v in sorted(values, reverse=True)) + ")"


def _networks_after(full: int) -> str:
    """Networks whose prefix ends in octet full + 1: /8*full .. /8*full + 7 (or /32)."""
    if full == 4:
        return rf"(?:{OCTET}\.){{3}}{OCTET}/32"
    zeros = r"\.0" * (3 - full)
    branches = [
        f"{_network_octet(bits)}{zeros}/{8 * full + bits}" if bits else f"0{zeros}/{8 * full}"
        for bits in range(8)
    ]
    head = rf"(?:{OCTET}\.){{{full}}}" if full else ""
    return head + "(?:" + "|".join(branches) + ")"


# An IPv4 network exactly as Python's ipaddress prints it: dotted quad without leading zeros,
# a prefix length 0-32, no host bits set. The loader asks ipaddress (for its reasons in the
# messages) and then checks the text is this canonical form.
IPV4_NETWORK = anchored("(?:" + "|".join(_networks_after(full) for full in range(5)) + ")")
IPV4_NETWORK_RULE = (
    "an IPv4 network written as address/prefix length (e.g. 10.0.0.0/24): no host bits set, "
    "no leading zeros, no netmask form"
)

MAC_ADDRESS = anchored("[0-9a-f]{2}(?::[0-9a-f]{2}){5}")
FABRIC_NAME = anchored("[a-z0-9][a-z0-9-]{0,39}")
CATALOG_MODEL = anchored("[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
USERNAME = anchored("[A-Za-z_][A-Za-z0-9_.-]{0,31}")
ENV_NAME = anchored("[A-Za-z_][A-Za-z0-9_]{0,127}")
KEY_PATH = anchored("[^\\x00-\\x1f\\x7f]+")  # length: max_length (code points in both dialects)
FREE_TEXT = anchored("[A-Za-z0-9 _.,:;()/+=@#-]{0,200}")

# A naming field's format spec: nothing, a width, zero padding and d/x/X. A width over 1
# without zero padding pads with spaces, which no device name may hold.
NAME_SPEC = r"(?::(?:0[1-9][0-9]?|1)?[dxX]?)?"


def naming_pattern(fields: set[str]) -> str:
    """The text of a naming pattern over ``fields`` whose names are device names (but for
    their length, which depends on how wide the fields expand: RULES_BEYOND_SCHEMA)."""
    field = r"\{(?:" + "|".join(sorted(fields)) + ")" + NAME_SPEC + r"\}"
    return anchored(f"(?:[A-Za-z0-9]|{field})(?:[A-Za-z0-9-]|{field})*")
