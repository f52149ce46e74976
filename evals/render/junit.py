"""The comparison as JUnit XML: one test suite per scenario, one test case per metric."""

import re
import xml.etree.ElementTree as ET
from collections import defaultdict

from evallens.reports import GateReportBody, MetricComparison
from evals.render._figures import detectable, points

# What XML 1.0 cannot hold, even escaped (ElementTree writes it as it is, and CI's parser then
# refuses the whole report): C0 controls but tab and line breaks, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """``text`` with every character XML cannot hold as U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def render_junit(body: GateReportBody) -> str:
    """JUnit XML that CI test tabs show; a regression is a failed test case."""
    by_scenario: dict[str, list[MetricComparison]] = defaultdict(list)
    for comparison in body.comparisons:
        by_scenario[comparison.scenario].append(comparison)
    failures = sum(c.regression for c in body.comparisons)
    root = ET.Element(
        "testsuites", name=_xml_text(f"evallens gate {body.eval_set_name}"), tests=str(len(body.comparisons)),
        failures=str(failures), errors="0",
    )  # fmt: skip
    for scenario, comparisons in by_scenario.items():
        suite = ET.SubElement(
            root, "testsuite", name=_xml_text(scenario), tests=str(len(comparisons)),
            failures=str(sum(c.regression for c in comparisons)), errors="0", skipped="0",
        )  # fmt: skip
        for c in comparisons:
            case = ET.SubElement(
                suite, "testcase", classname=_xml_text(f"evallens.{scenario}"), name=c.metric, time="0"
            )
            summary = (
                f"{c.metric} {c.baseline:.3f} -> {c.candidate:.3f} ({points(c.delta)} points), "
                f"n={c.num_pairs}, worse/better {c.num_worse}/{c.num_better}, "
                f"{c.test} one-sided p={c.p_value:.4g}, adjusted p={c.p_adjusted:.4g}, "
                f"detects drops >= {detectable(c)} points"
            )
            if c.regression:
                failure = ET.SubElement(case, "failure", message=f"regression: {summary}", type="regression")
                failure.text = summary
            else:
                ET.SubElement(case, "system-out").text = summary
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
