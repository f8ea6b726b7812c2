"""Reports written by ``pytest --racecheck-report-dir``: traces, and a layout for test ids.

Real pytest runs (pytester) of real marked tests on the real engine. The
browser half (the page renders, traces expand, nothing is fetched) lives in
test_report_browser.py, which reuses :data:`TESTS` and :func:`make_report`.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

TESTS = """
import asyncio
import pytest


class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount


class TestAccountWithAVeryLongClassNameThatMustWrapInsideItsCell:
    @pytest.mark.racecheck(schedules=50)
    @pytest.mark.parametrize("amounts", [(10, 5)])
    async def test_deposits_are_not_lost_when_two_tasks_deposit_at_once(self, amounts):
        account = Account()
        await asyncio.gather(*(account.deposit(a) for a in amounts))
        assert account.balance == sum(amounts)


@pytest.mark.racecheck(schedules=20)
async def test_one_deposit():
    account = Account()
    await account.deposit(3)
    assert account.balance == 3
"""


def make_report(pytester: pytest.Pytester) -> Path:
    """Run :data:`TESTS` with --racecheck-report-dir; the report directory."""
    pytester.makepyfile(test_bank=TESTS)
    result = pytester.runpytest(
        "--racecheck-report-dir=out", "--racecheck-db=none", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=1, failed=1)
    return pytester.path / "out"


@pytest.fixture
def report(pytester: pytest.Pytester, real_engine: None) -> Path:
    return make_report(pytester)


def _records(report: Path) -> dict[str, dict[str, object]]:
    data = json.loads((report / "racecheck.json").read_text("utf-8"))
    return {str(r["scenario"]).rsplit("::", 1)[1]: r for r in data["records"]}


def test_a_failing_test_gets_the_same_trace_as_the_cli(report: Path) -> None:
    records = _records(report)
    failing = records["test_deposits_are_not_lost_when_two_tasks_deposit_at_once[amounts0]"]
    trace = failing["trace"]
    assert isinstance(trace, dict), "the pytest report has no trace"
    names = [a["name"] for a in trace["actors"]]
    assert any("deposit(10)" in n for n in names) and any("deposit(5)" in n for n in names)
    assert trace["steps"] and trace["failure"]["message"].startswith("AssertionError")
    assert failing["origin"] == "pytest"
    passing = records["test_one_deposit"]
    assert passing["verdict"] == "safe" and passing["trace"] is None


def test_the_html_has_swimlanes_and_a_table_of_test_ids(report: Path) -> None:
    html = (report / "index.html").read_text("utf-8")
    assert '<svg class="swimlane"' in html
    assert 'class="matrix"' not in html, "the scenario × variant matrix, for test ids"
    assert 'class="tests"' in html
    # node ids break after their separators, not in the middle of a word
    assert "test_bank.py::<wbr>TestAccountWithAVeryLongClassNameThatMustWrapInsideItsCell" in html
    assert ">test<" not in html, "a 'test' variant column"
    # a test fails or passes: the header does not speak of scenario expectations
    assert re.search(r"\d+ of \d+ tests failed", html), html[:2000]
    assert "expectation" not in html


def test_junit_names_each_test_case_by_its_node_id(report: Path) -> None:
    root = ET.parse(report / "racecheck.xml").getroot()
    cases = {(c.get("classname"), c.get("name")) for c in root.iter("testcase")}
    assert ("test_bank.py", "test_one_deposit") in cases
    assert (
        "test_bank.py::TestAccountWithAVeryLongClassNameThatMustWrapInsideItsCell",
        "test_deposits_are_not_lost_when_two_tasks_deposit_at_once[amounts0]",
    ) in cases
