"""Apply an frr.conf to a switch's running FRR with fewer vtysh runs than frr-reload.py.

This file runs ON the switch (copied by the driver with the candidate, run by the switch's
python3, standard library only). It loads FRR's own ``frr-reload.py`` as a module and uses
its parser and differ (``Config``, ``compare_context_objects``, ``lines_to_config``), so what
is deleted and added is exactly what ``frr-reload.py --reload`` would do. What it saves is
vtysh runs, each ~0.4 s of CPU in the lab's guest and the bulk of a deploy's time there
(docs/benchmarks.md, "Lab substrates"):

- ``frr-reload.py --reload`` reads and marks the running config twice and applies its adds
  twice, even when the first pass left nothing to do; then the driver ran ``--test`` (three
  more vtysh runs) and a ``show running-config`` to record: 12 runs for a typical commit.
- Here: mark the candidate, read and mark the running config, apply, read and mark it, apply
  frr-reload's second pass (the first pass's adds again, with what is still missing), read
  and mark it again (that last reading is also the check and the record): 9 runs, 8 when the
  compare before the commit left the candidate's mark (``--cache``), 2 when nothing changes.

Usage: ``python3 apply_on_switch.py [--pathspace NS] [--frr-reload PATH] [--cache DIR] CONF
RUNNING_OUT`` applies; ``... --test RUNNING CONF`` only compares CONF with a running config
read before (the driver's snapshot: ``frr-reload.py --test``'s answer with one reading less),
and with ``--cache DIR`` keeps CONF's marked form for the commit that follows. The apply
writes the running config read after it (``show running-config``, whole) to RUNNING_OUT and
prints one JSON object: ``applied`` (no line left to add, no step failed),
``errors``, ``left_to_add``, ``left_to_delete`` (each entry the lines with their context, as
``frr-reload.py --test`` prints them), ``deleted``, ``added``, ``passes``, ``vtysh_runs``.
Exit 0 applied, 1 not (the JSON says why), 3 when FRR's frr-reload.py cannot be loaded as a
module (nothing was done: the driver falls back to running ``frr-reload.py --reload``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
from typing import Any

FRR_RELOAD = "/usr/lib/frr/frr-reload.py"
UNAVAILABLE = 3
HEADER = ("Building configuration...", "Current configuration:")
"""``show running-config``'s lines that are not configuration (frr-reload skips them too)."""
IGNORED = ("frr version", "frr defaults", "hostname ", "no hostname ")
"""Lines never counted as left to add or delete: FRR's version stamp, and the hostname (an
FRR instance in a pathspace, as the tests', cannot have its own)."""
API = ("Vtysh", "VtyshException", "Config", "compare_context_objects", "lines_to_config")


def load_frr_reload(path: str) -> Any:
    """FRR's frr-reload.py as a module (its ``main`` runs only as a script), or None when it
    is missing or lacks the parts used here (another FRR version)."""
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location("frr_reload", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:
        return None
    return module if all(hasattr(module, name) for name in API) else None


class Counted:
    """frr-reload's Vtysh, counting the vtysh processes it starts (the figure this saves)."""

    def __init__(self, vtysh: Any) -> None:
        self.vtysh = vtysh
        self.runs = 0

    def __call__(self, command: Any, stdouts: Any = None) -> str:
        self.runs += 1
        return str(self.vtysh(command, stdouts))

    def mark_file(self, filename: str) -> str:
        self.runs += 1
        return str(self.vtysh.mark_file(filename))

    def exec_file(self, filename: str) -> None:
        self.runs += 1
        self.vtysh.exec_file(filename)


class CachedMarks:
    """Marks files through ``vtysh`` once per content: a compare (``--test``) stores the
    candidate's marked form in ``folder``, the commit that follows reads it from there (one
    vtysh run less each). Keyed by the SHA-256 of the file's text, so a different candidate
    is never served an old mark; the commit removes the folder."""

    def __init__(self, vtysh: Counted, folder: str) -> None:
        self.vtysh = vtysh
        self.folder = folder

    def mark_file(self, filename: str) -> str:
        with open(filename, "rb") as handle:
            key = hashlib.sha256(handle.read()).hexdigest()
        path = os.path.join(self.folder, key)
        if os.path.isfile(path):
            with open(path) as handle:
                return handle.read()
        marked = self.vtysh.mark_file(filename)
        shutil.rmtree(self.folder, ignore_errors=True)  # one candidate at a time
        os.makedirs(self.folder, exist_ok=True)
        with open(path + ".new", "w") as handle:
            handle.write(marked)
        os.replace(path + ".new", path)
        return marked


class Applier:
    def __init__(self, fr: Any, vtysh: Counted, workdir: str) -> None:
        self.fr = fr
        self.vtysh = vtysh
        self.workdir = workdir
        self.errors: list[str] = []

    def config_of(self, marked: str) -> Any:
        """A frr-reload Config of marked text, read as its ``load_from_show_running`` does."""
        config = self.fr.Config(self.vtysh)
        for raw in marked.split("\n"):
            line = raw.strip()
            if line and line not in HEADER:
                config.lines.append(line)
        config.load_contexts()
        return config

    def _file(self, name: str, text: str) -> str:
        path = os.path.join(self.workdir, name)
        with open(path, "w") as handle:
            handle.write(text)
        return path

    def candidate(self, path: str, cache: str | None = None) -> Any:
        """The candidate as frr-reload reads it (marked by vtysh: one run, none when
        ``cache`` holds its mark)."""
        config = self.fr.Config(self.vtysh if cache is None else CachedMarks(self.vtysh, cache))
        config.load_from_file(path)
        return config

    def stored_running(self, path: str) -> Any:
        """A running config read earlier (the driver's snapshot), marked: one vtysh run."""
        with open(path) as handle:
            text = handle.read()
        body = "\n".join(line for line in text.split("\n") if line.strip() not in HEADER)
        return self.config_of(self.vtysh.mark_file(self._file("running.conf", body + "\n")))

    def running(self) -> tuple[str, Any]:
        """FRR's running config: the whole text (what the driver records) and its Config."""
        text = self.vtysh("show running-config")
        body = "\n".join(line for line in text.split("\n") if line.strip() not in HEADER)
        marked = self.vtysh.mark_file(self._file("running.conf", body + "\n"))
        return text, self.config_of(marked)

    def delete(self, ctx_keys: Any, line: Any) -> bool:
        """One line's ``no`` form; a ``no`` FRR refuses whole is tried again shorter, a word
        at a time (``no ip ospf authentication message-digest X`` is only taken as ``no ip
        ospf authentication``), as frr-reload does."""
        command = list(self.fr.lines_to_config(ctx_keys, line, True))
        while True:
            try:
                self.vtysh(["configure", *command])
                return True
            except self.fr.VtyshException:
                words = command[-1].split(" ")
                if len(words) <= 2:
                    self.errors.append("could not remove: " + " -- ".join(command))
                    return False
                command[-1] = " ".join(words[:-1])

    def add(self, lines: list[Any], second_pass: bool) -> int:
        """Apply ``lines`` with one ``vtysh -f``; the number of commands given."""
        commands = []
        for ctx_keys, line in lines:
            if line == "!" or (second_pass and ctx_keys[0].startswith("no ")):
                continue
            commands.append("\n".join(self.fr.lines_to_config(ctx_keys, line, False)) + "\n")
        if commands:
            try:
                self.vtysh.exec_file(self._file("add.conf", "\n".join(commands) + "\n"))
            except self.fr.VtyshException as exc:
                self.errors.append(f"vtysh -f of the lines to add: {exc}")
        return len(commands)

    def as_text(self, items: list[Any], delete: bool) -> list[str]:
        return [
            "\n".join(self.fr.lines_to_config(ctx_keys, line, delete))
            for ctx_keys, line in items
            if line != "!"
        ]


def significant(items: list[Any]) -> list[Any]:
    """The differ's (context, line) items but those in IGNORED."""
    return [
        (ctx_keys, line)
        for ctx_keys, line in items
        if not (line or ctx_keys[-1]).strip().startswith(IGNORED)
    ]


def differences(fr: Any, candidate: Any, running: Any) -> tuple[list[Any], list[Any]]:
    to_add, to_delete = fr.compare_context_objects(candidate, running)
    return significant(to_add), significant(to_delete)


def test(fr: Any, vtysh: Counted, conf: str, running: str, cache: str | None) -> dict[str, Any]:
    """What applying ``conf`` over the running config stored in ``running`` would delete and
    add (``frr-reload.py --test``'s answer, from a reading the driver already has)."""
    with tempfile.TemporaryDirectory(prefix="dpctl-apply-") as workdir:
        applier = Applier(fr, vtysh, workdir)
        try:
            candidate = applier.candidate(conf, cache)
        except fr.VtyshException as exc:
            return {"errors": [f"vtysh cannot read {conf}: {exc}"]}
        to_add, to_delete = differences(fr, candidate, applier.stored_running(running))
        return {
            "errors": [],
            "left_to_add": applier.as_text(to_add, False),
            "left_to_delete": applier.as_text(to_delete, True),
        }


def apply(
    fr: Any, vtysh: Counted, conf: str, running_out: str, cache: str | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dpctl-apply-") as workdir:
        applier = Applier(fr, vtysh, workdir)
        try:
            candidate = applier.candidate(conf, cache)
        except fr.VtyshException as exc:  # nothing applied, as frr-reload
            return {"applied": False, "errors": [f"vtysh cannot read {conf}: {exc}"]}
        finally:
            if cache is not None:
                shutil.rmtree(cache, ignore_errors=True)
        text, running = applier.running()
        to_add, to_delete = differences(fr, candidate, running)
        first_adds = list(to_add)
        result: dict[str, Any] = {"deleted": 0, "added": 0, "passes": 0}
        if to_add or to_delete:
            # deletes only on the first pass (frr-reload's reason: a second pass would delete
            # what FRR itself added for a new line)
            result["deleted"] = sum(applier.delete(k, line) for k, line in to_delete)
            result["added"] = applier.add(to_add, False)
            result["passes"] = 1
            text, running = applier.running()
            to_add, to_delete = differences(fr, candidate, running)
        if first_adds or to_add:
            # frr-reload's second pass, always as it does: the first pass's adds again with
            # what is still missing (a keyword that may appear once, a ``no`` that removed
            # more than its line). Skipping it when nothing was missing saved 3 vtysh runs,
            # but EVPN-MH's bgpd-crash lab test failed twice after that (2026-12-07), so the
            # commit does what frr-reload --reload does, pass for pass.
            result["added"] += applier.add(to_add + first_adds, True)
            result["passes"] = 2
            text, running = applier.running()
            to_add, to_delete = differences(fr, candidate, running)
        with open(running_out, "w") as handle:
            handle.write(text)
        left_to_add = applier.as_text(to_add, False)
        result.update(
            applied=not applier.errors and not left_to_add,
            errors=applier.errors,
            left_to_add=left_to_add,
            left_to_delete=applier.as_text(to_delete, True),
        )
        return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pathspace", default=None, help="FRR's -N (a test's instance)")
    parser.add_argument("--frr-reload", default=FRR_RELOAD, help="FRR's frr-reload.py")
    parser.add_argument("--cache", default=None, help="folder of the candidate's mark")
    parser.add_argument("--test", metavar="RUNNING", help="compare with this stored reading")
    parser.add_argument("conf")
    parser.add_argument("running_out", nargs="?")
    args = parser.parse_args(argv)
    if (args.test is None) == (args.running_out is None):
        parser.error("give RUNNING_OUT to apply, or --test RUNNING to compare")
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what vtysh prints while it applies goes to stderr, not into the answer
    fr = load_frr_reload(args.frr_reload)
    if fr is None:
        answer.write(json.dumps({"applied": False, "errors": [f"{args.frr_reload}: unusable"]}))
        return UNAVAILABLE
    vtysh = Counted(fr.Vtysh("/usr/bin", "/etc/frr", None, args.pathspace))
    if args.test is not None:
        result = test(fr, vtysh, args.conf, args.test, args.cache)
        ok = not result["errors"]
    else:
        result = apply(fr, vtysh, args.conf, args.running_out, args.cache)
        ok = result["applied"]
    result["vtysh_runs"] = vtysh.runs
    answer.write(json.dumps(result) + "\n")
    answer.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
