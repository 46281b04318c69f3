"""The slowest tests of each tier and the tiers' totals, from the JUnit reports the test sessions
write (nox -s tests: build/test-reports/fast.xml; nox -s tests_slow: build/test-reports/slow.xml;
nox -s tests_history: build/test-reports/history.xml, where it ran).

    python tests/durations.py                 # both tiers, the ten slowest tests of each
    python tests/durations.py --top 30 FILE   # another report, or more of it

A test's time is pytest's for it: its setup (a module's fixture is paid by the first test that
uses it), call and teardown, in wall seconds on a machine that was running the tier's other
workers beside it. The tier's wall time is the session's, from its first test to its last.
Standard library only.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "build" / "test-reports"
TIERS = {"fast": "make test", "slow": "make test-slow, its pytest",
         "history": "make test-history, its pytest"}
# The tiers make check runs; the history tier's report is read where it was written.
REQUIRED = ("fast", "slow")


@dataclass(frozen=True)
class Report:
    """What one tier's JUnit report says."""

    path: Path
    wall_s: float
    tests: list[tuple[float, str]]  # (seconds, node id), slowest first
    outcomes: dict[str, int]


def node_id(classname: str, name: str) -> str:
    """pytest's node id from JUnit's dotted classname (tests.test_x, or tests.test_x.TestY), less
    the "@group" that pytest-xdist's loadgroup appends to a test's name."""
    name = name.rsplit("@", 1)[0] if "@" in name else name
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = "/".join(parts[:cut]) + ".py"
        if (ROOT / module).is_file():
            return "::".join([module, *parts[cut:], name])
    return f"{classname}::{name}"


def read_report(path: Path) -> Report:
    suite = ET.parse(path).getroot()
    if suite.tag == "testsuites":
        suite = suite[0]
    tests, outcomes = [], {"passed": 0, "failed": 0, "skipped": 0}
    for case in suite.iter("testcase"):
        tests.append((float(case.get("time", 0)), node_id(case.get("classname", ""),
                                                          case.get("name", ""))))
        kinds = {child.tag for child in case}
        outcome = ("failed" if kinds & {"failure", "error"} else
                   "skipped" if "skipped" in kinds else "passed")
        outcomes[outcome] += 1
    tests.sort(key=lambda t: (-t[0], t[1]))
    return Report(path, float(suite.get("time", 0)), tests, outcomes)


def lines(name: str, report: Report, top: int) -> list[str]:
    counted = ", ".join(f"{n} {kind}" for kind, n in report.outcomes.items() if n)
    total = sum(seconds for seconds, _ in report.tests)
    out = [f"{name}: {len(report.tests)} tests ({counted}), {report.wall_s:.0f} s wall, "
           f"{total:.0f} s summed over the tests",
           f"  the {min(top, len(report.tests))} slowest:"]
    out += [f"  {seconds:7.1f} s  {node}" for seconds, node in report.tests[:top]]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="*", type=Path,
                        help=f"JUnit reports (default: {REPORTS.relative_to(ROOT)}/fast.xml and slow.xml)")
    parser.add_argument("--top", type=int, default=10, help="how many of the slowest (10)")
    args = parser.parse_args(argv)
    named = ({p.stem: p for p in args.reports} if args.reports else
             {tier: REPORTS / f"{tier}.xml" for tier in TIERS
              if tier in REQUIRED or (REPORTS / f"{tier}.xml").is_file()})
    missing = [str(p) for p in named.values() if not p.is_file()]
    if missing:
        print(f"no report at {', '.join(missing)}: run nox -s tests (fast.xml) and nox -s "
              f"tests_slow (slow.xml) first", file=sys.stderr)
        return 1
    for i, (tier, path) in enumerate(named.items()):
        title = f"{tier} tier ({TIERS[tier]})" if tier in TIERS else str(path)
        print(("\n" if i else "") + "\n".join(lines(title, read_report(path), args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
