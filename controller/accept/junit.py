"""The acceptance report as JUnit XML (one test suite per stage, one test case per finding),
the format CI systems and dashboards read as is: a failed finding is a ``<failure>`` whose
message is what was found and whose text is what to do, a skipped one a ``<skipped>``.
Written with the standard library; the tests read it back with junitparser.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from controller.accept.result import STAGES, AcceptReport


def junit_xml(report: AcceptReport) -> bytes:
    root = ET.Element("testsuites", name=f"dpctl accept {report.fabric}")
    counts = report.counts()
    root.set("tests", str(len(report.findings)))
    root.set("failures", str(counts["fail"]))
    root.set("skipped", str(counts["skip"]))
    root.set("time", f"{report.seconds:.1f}")
    for stage in STAGES:
        rows = [f for f in report.ordered() if f.stage == stage]
        if not rows:
            continue
        suite = ET.SubElement(root, "testsuite", name=f"{report.fabric}.{stage}")
        suite.set("tests", str(len(rows)))
        suite.set("failures", str(sum(f.status == "fail" for f in rows)))
        suite.set("skipped", str(sum(f.status == "skip" for f in rows)))
        suite.set("errors", "0")
        for f in rows:
            case = ET.SubElement(suite, "testcase", name=f.element, classname=f"accept.{stage}")
            if f.status == "fail":
                failure = ET.SubElement(case, "failure", message=f.what, type="AcceptFailure")
                failure.text = f"what to do: {f.fix}"
            elif f.status == "skip":
                ET.SubElement(case, "skipped", message=f.what)
            else:
                ET.SubElement(case, "system-out").text = f.what
    ET.indent(root)
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"
