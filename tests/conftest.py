"""What a test needs that a machine may lack, never skipped quietly in CI.

`pytest.mark.requires(missing=REASON)`: REASON None means it is there; otherwise the test
skips with REASON on a user's machine and fails under CI=true (tests/skip_or_fail.py, which
tests call themselves where the reason is known only while they run).

The bmv2 tier: tests marked `bmv2` run against real p4c and bmv2 (p4switch/p4lang.py finds
them: $P4LANG_HOME, ../shared/p4lang, PATH).  They take the `p4lang_toolchain` fixture, which gives the
toolchain; without one it skips with one line naming what is missing, and under CI=true it
fails instead.  At the end the run prints the tier's count, and under CI=true a tier that ran
nothing or skipped anything fails the run: it may not vanish quietly."""

import os

import pytest

from p4switch import p4lang
from skip_or_fail import skip_or_fail

_TIER = {"passed": 0, "failed": 0, "skipped": 0}


@pytest.fixture(scope="session")
def p4lang_toolchain():
    found, problem = p4lang.lookup()
    skip_or_fail(problem)
    return found


def pytest_addoption(parser):
    parser.addoption("--fuzz-seed", type=int, default=None, metavar="N",
                     help="run the seeded fuzz tests with seed N instead of their own (a "
                          "failing fuzz test names its seed)")


@pytest.fixture
def fuzz_seed(request):
    """fuzz_seed(own): the seed a fuzz test uses, its own stable one unless --fuzz-seed N."""
    given = request.config.getoption("fuzz_seed")
    return lambda own: own if given is None else given


def pytest_configure(config):
    config.addinivalue_line("markers", "requires(missing=REASON): skip with REASON, or fail "
                                       "under CI=true, when REASON is not None")


def pytest_runtest_setup(item):
    for mark in item.iter_markers("requires"):
        skip_or_fail(mark.kwargs.get("missing"))


def pytest_runtest_logreport(report):
    if "bmv2" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _TIER[report.outcome] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if sum(_TIER.values()):
        terminalreporter.write_line(
            f"bmv2 tier (real p4c and bmv2): {sum(_TIER.values())} tests, {_TIER['passed']} "
            f"passed, {_TIER['failed']} failed, {_TIER['skipped']} skipped")


def pytest_sessionfinish(session, exitstatus):
    """Under CI=true, a skipped bmv2 test, or a whole run (no -m, -k or paths) with no bmv2
    test in it, fails the run."""
    if not p4lang.in_ci() or session.config.option.collectonly:
        return
    whole_run = (not session.config.getoption("markexpr", "")
                 and not session.config.getoption("keyword", "") and not any(os.path.exists(a.split("::")[0])
                                for a in session.config.invocation_params.args))
    if _TIER["skipped"] or (whole_run and not sum(_TIER.values())):
        print(f"bmv2 tier: {sum(_TIER.values())} ran, {_TIER['skipped']} skipped; "
              "CI=true requires it to run")
        session.exitstatus = 1
