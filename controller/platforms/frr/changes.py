"""What a commit of an FRR switch's files changes: pure functions over the files' texts.

Which links an ``ip.batch`` creates, whether two batches differ only in ports' admin state (a
drain step), what ``frr-reload.py --test`` says is left to delete or add, and the snapshot of
a switch's applied files and FRR's running config the driver reads in one exec.
"""

from __future__ import annotations

import difflib
import shlex

MAIN_FILE = "frr.conf"
LINUX_FILES = ("ip.batch", "bridge.batch", "sysctl.conf", "qos.tc")
IGNORED_RELOAD_LINES = ("frr version", "frr defaults", "hostname ", "no hostname ")


def file_diff(name: str, old: str, new: str) -> list[str]:
    """A stored file against the candidate's, as unified diff lines (none when equal)."""
    return list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"running/{name}",
            f"candidate/{name}",
        )
    )


def links_rebuilt(old: dict[str, str], new: dict[str, str]) -> bool:
    """Whether applying ``new`` over ``old`` deletes and re-creates the links the old
    ip.batch made: any change to the Linux files but ports' admin state (a drain step)."""
    if all(old.get(n) == new.get(n) for n in LINUX_FILES):
        return False
    delta = port_state_delta(old.get("ip.batch", ""), new.get("ip.batch", ""))
    return delta is None or any(old.get(n) != new.get(n) for n in LINUX_FILES[1:])


class Snapshot:
    """A switch's applied files, FRR's running config, and the running config recorded right
    after the last commit frr-reload confirmed whole (headers stripped; "" when none)."""

    def __init__(self, files: dict[str, str], running: str, applied: str) -> None:
        self.files = files
        self.running = running
        self.applied = applied

    def unchanged_since_commit(self) -> bool:
        return MAIN_FILE in self.files and bool(self.applied) and self.running == self.applied


def strip_running_header(text: str) -> str:
    lines = text.splitlines(keepends=True)
    skip = ("Building configuration", "Current configuration", "frr version", "frr defaults")
    return "".join(line for line in lines if not line.startswith(skip) and line.strip() != "")


def significant_lines(items: list[str]) -> list[str]:
    """frr-reload's entries (each lines with their context) as the lines ``parse_reload_test``
    gives: one per line, FRR's version stamp and the hostname left out."""
    lines = (raw.rstrip() for item in items for raw in item.splitlines())
    return [line for line in lines if line and not line.startswith(IGNORED_RELOAD_LINES)]


def parse_reload_test(output: str) -> tuple[list[str], list[str]]:
    delete: list[str] = []
    add: list[str] = []
    target: list[str] | None = None
    for raw in output.splitlines():
        line = raw.rstrip()
        if line == "Lines To Delete":
            target = delete
        elif line == "Lines To Add":
            target = add
        elif (
            target is not None
            and line
            and not set(line) <= {"="}
            and not line.startswith(IGNORED_RELOAD_LINES)
        ):
            target.append(line)
    return delete, add


def created_links(ip_batch: str) -> list[str]:
    """Links an ip.batch creates (`link add [link X] name N ...`), in creation order."""
    names = []
    for line in ip_batch.splitlines():
        words = line.split()
        if words[:2] == ["link", "add"] and "name" in words:
            names.append(words[words.index("name") + 1])
    return names


def port_state_delta(old: str, new: str) -> list[str] | None:
    """The new lines, when two ip.batch files differ only in ports' admin state (up/down)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if not old_lines or len(old_lines) != len(new_lines):
        return None
    created = set(created_links(old))
    changed = []
    for before, after in zip(old_lines, new_lines, strict=True):
        if before == after:
            continue
        a, b = before.split(), after.split()
        if (
            a[:3] != ["link", "set", "dev"]
            or a[:-1] != b[:-1]
            or {a[-1], b[-1]} != {"up", "down"}
            or a[3] in created
        ):
            return None
        changed.append(after)
    return changed


def tc_devices(qos: str) -> list[str]:
    devices: list[str] = []
    for line in qos.splitlines():
        words = line.split()
        if words[:2] == ["qdisc", "add"] and "root" in words and words[3] not in devices:
            devices.append(words[3])
    return devices


LINUX_STEPS = (
    ("ip.batch", "ip -force -batch"),
    ("bridge.batch", "bridge -force -batch"),
    ("sysctl.conf", "sysctl -q -p"),
    ("qos.tc", "tc -force -batch"),
)
"""Each Linux file and the tool that applies it, in the order they are applied."""


def rebuild_script(
    state: str, old: dict[str, str], new: dict[str, str], marker: str
) -> tuple[dict[str, str], list[str]]:
    """Tear down what the old ip.batch created (and the old and new qdiscs), then apply each
    new Linux file: the files to upload (under ``state``) and the script. A step that fails
    prints ``marker`` and the file's name, then the tail of its log."""
    created = created_links(old.get("ip.batch", ""))
    script = [f"ip link del {shlex.quote(name)} 2>/dev/null" for name in reversed(created)]
    for dev in tc_devices(old.get("qos.tc", "") + new.get("qos.tc", "")):
        script.append(f"tc qdisc del dev {shlex.quote(dev)} root 2>/dev/null")
    log = f"{state}/step.log"
    for name, tool in LINUX_STEPS:
        if name in new:
            script.append(
                f"if ! {tool} {state}/current/{name} >{log} 2>&1; then "
                f"printf '\\n{marker} %s\\n' {name}; tail -c 300 {log}; fi"
            )
    files = {f"current/{name}": new[name] for name, _tool in LINUX_STEPS if name in new}
    return files, script
