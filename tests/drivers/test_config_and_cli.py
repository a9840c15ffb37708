"""get_config's arguments (retrieve, full, sanitized, format), sanitizing per platform, the
refusal to restore a sanitized config, and ``cli``, on dpctl's three drivers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from napalm.base.exceptions import CommandErrorException, ReplaceConfigException

from controller.drivers import bundle, sanitize
from tests.drivers.napalm_conformance.doubles import patched

PLATFORMS = ["frr", "sonic", "asternos"]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("which", ["running", "startup", "candidate"])
def test_retrieve_fills_only_what_was_asked(platform: str, which: str) -> None:
    driver = patched(platform)
    config = driver.get_config(retrieve=which)
    assert [k for k, v in config.items() if v] == ([] if which == "candidate" else [which])
    double = getattr(driver, driver.patched_attrs[0])
    other = {"running": "startup", "startup": "running"}.get(which, "startup")
    # nothing of the other store was read (FRR: no /etc/frr/frr.conf; SONiC: no saved file)
    words = {"frr": {"startup": "/etc/frr/frr.conf", "running": "show running-config"}}
    if platform == "frr" and which != "candidate":
        assert not any(words["frr"][other] in c for c in double.commands)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_candidate_is_what_was_loaded(platform: str) -> None:
    driver = patched(platform)
    text = {
        "frr": bundle.pack({"frr.conf": "hostname x\n"}),
        "sonic": bundle.pack({"config_db.json": "{}\n"}),
        "asternos": "hostname x\n",
    }[platform]
    driver.load_merge_candidate(config=text)
    assert driver.get_config(retrieve="candidate")["candidate"] == text


@pytest.mark.parametrize("platform", PLATFORMS)
def test_format_other_than_text_is_refused_by_name(platform: str) -> None:
    with pytest.raises(NotImplementedError, match=r"format='json'.*only format='text'"):
        patched(platform).get_config(format="json")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_full_is_refused_with_the_reason(platform: str) -> None:
    with pytest.raises(NotImplementedError, match=r"full=True\): .*(defaults|whole)"):
        patched(platform).get_config(full=True)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_bad_retrieve_is_named(platform: str) -> None:
    with pytest.raises(ValueError, match=r"retrieve='everything' is not one of"):
        patched(platform).get_config(retrieve="everything")


def test_frr_startup_is_what_frr_loads_when_it_starts() -> None:
    driver = patched("frr")
    startup = bundle.unpack(driver.get_config(retrieve="startup")["startup"], "frr.conf")
    assert list(startup) == ["frr.conf"] and startup["frr.conf"].startswith("hostname p1-g1-leaf1")


def test_frr_sanitized_removes_the_bgp_password_and_nothing_else() -> None:
    driver = patched("frr", "p1-spine2")
    plain, clean = driver.get_config(), driver.get_config(sanitized=True)
    assert "neighbor 192.0.2.1 password s3cr3t-bgp" in plain["running"]
    assert "neighbor 192.0.2.1 password <removed>" in clean["running"]
    assert "s3cr3t" not in json.dumps(clean)
    changed = [
        (a, b)
        for a, b in zip(plain["running"].splitlines(), clean["running"].splitlines(), strict=True)
        if a != b
    ]
    assert (
        changed
        == [(" neighbor 192.0.2.1 password s3cr3t-bgp", " neighbor 192.0.2.1 password <removed>")]
        * len(changed)
        and changed
    )


def test_sonic_sanitized_removes_snmp_communities_and_user_passwords() -> None:
    driver = patched("sonic", "snmp_secrets", "test_get_config_sanitized")
    plain = bundle.unpack(driver.get_config()["running"], "config_db.json")
    clean = bundle.unpack(driver.get_config(sanitized=True)["running"], "config_db.json")
    communities = {"p1-fabric-ro": {"TYPE": "RO"}, "p1-fabric-rw": {"TYPE": "RW"}}
    assert json.loads(plain["config_db.json"])["SNMP_COMMUNITY"] == communities
    db = json.loads(clean["config_db.json"])
    assert db["SNMP_COMMUNITY"] == {"<removed>": {"TYPE": "RO"}, "<removed>:2": {"TYPE": "RW"}}
    user = db["SNMP_USER"]["dpctl_admin"]
    assert user["SNMP_USER_AUTH_PASSWORD"] == user["SNMP_USER_ENCRYPTION_PASSWORD"] == "<removed>"
    assert user["SNMP_USER_AUTH_TYPE"] == "SHA"  # only the secrets go
    assert db["SNMP_USER"]["dpctl_poller"]["SNMP_USER_AUTH_PASSWORD"] == ""  # none to hide
    for secret in ("p1-fabric-r", "p1-auth-Kq7vR2", "p1-priv-Hw3nX8"):
        assert secret in plain["config_db.json"] and secret not in clean["config_db.json"]


@pytest.mark.parametrize(
    ("line", "clean"),
    [
        ("password zebra", "password <removed>"),
        ("enable password 8 $1$abc", "enable password <removed>"),
        (" neighbor 10.0.0.1 password x y", " neighbor 10.0.0.1 password <removed>"),
        (" ip ospf authentication-key k", " ip ospf authentication-key <removed>"),
        (" ip ospf message-digest-key 1 md5 k", " ip ospf message-digest-key 1 md5 <removed>"),
        (" isis password md5 k", " isis password md5 <removed>"),
        (
            " area-password clear k authenticate snp validate",
            " area-password clear <removed> authenticate snp validate",
        ),
        (" ip rip authentication string k", " ip rip authentication string <removed>"),
        ("  key-string k", "  key-string <removed>"),
        (" neighbor SPINES peer-group", " neighbor SPINES peer-group"),
    ],
)
def test_frr_secret_lines(line: str, clean: str) -> None:
    assert sanitize.frr_text(line + "\n") == clean + "\n"


def test_klish_uses_napalms_cisco_filters_too() -> None:
    text = "snmp-server community public RO\nusername admin password 0 x\nhostname leaf\n"
    assert sanitize.klish_text(text) == (
        "snmp-server community <removed>\nusername admin password 0 <removed>\nhostname leaf\n"
    )


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_sanitized_config_is_never_restored(platform: str) -> None:
    driver = patched(platform, "p1-spine2" if platform == "frr" else "p1-g1-leaf1")
    saved = driver.get_config(retrieve="running", sanitized=True)["running"]
    if platform != "frr":  # a device without secrets: one placeholder makes it sanitized
        saved = saved.replace("hostname", "hostname <removed>", 1)
    double = getattr(driver, driver.patched_attrs[0])
    double.commands.clear()
    with pytest.raises(ReplaceConfigException, match="sanitized"):
        driver.dpctl.restore_config(saved)
    assert double.commands == []  # nothing sent


def test_is_sanitized_needs_the_placeholder_as_a_word() -> None:
    assert sanitize.is_sanitized(' "SNMP_COMMUNITY": {"<removed>": {}}')
    assert sanitize.is_sanitized(" neighbor x password <removed>\n")
    assert not sanitize.is_sanitized("description <removed-later>\n")
    assert not sanitize.is_sanitized("hostname leaf\n")


# ------------------------------------------------------------------------------- cli


def test_frr_cli_show_goes_to_vtysh_the_rest_to_the_shell() -> None:
    driver = patched("frr")
    out = driver.cli(["show version", "hostname"])
    assert out["show version"].startswith("FRRouting 8.4") and out["hostname"] == "p1-g1-leaf1\n"
    assert driver._client.commands == ["vtysh -c 'show version'", "hostname"]
    routes: Any = driver.cli(["show ip route json"], encoding="json")["show ip route json"]
    assert "1.0.4.0/24" in routes


def test_cli_json_of_a_text_answer_is_an_error() -> None:
    with pytest.raises(CommandErrorException, match="'hostname' did not answer JSON"):
        patched("frr").cli(["hostname"], encoding="json")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cli_encoding_is_checked(platform: str) -> None:
    with pytest.raises(NotImplementedError, match="encoding='xml'"):
        patched(platform).cli(["show version"], encoding="xml")


def test_sonic_cli_runs_in_its_shell() -> None:
    driver = patched("sonic")
    assert driver.cli(["show version"])["show version"].startswith("\nSONiC Software Version")
    assert driver._session.commands == ["show version"]


def test_asternos_cli_runs_klish_show_commands_only() -> None:
    driver = patched("asternos")
    assert driver.cli(["show running-config"])["show running-config"]
    with pytest.raises(CommandErrorException, match=r"klish `show` commands only.*system bash"):
        driver.cli(["show version", "system bash"])
    assert driver._session.commands == ["show running-config"]
