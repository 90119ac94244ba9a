"""Stand-ins for the p4lang toolchain (p4switch/p4lang.py) in tests that only build command
lines: `fake_p4lang` has every tool in /usr/bin (never run), `no_p4lang` has none."""

import pytest

from p4switch import p4lang


@pytest.fixture
def fake_p4lang(monkeypatch):
    toolchain = p4lang.Toolchain("PATH", None, {tool: f"/usr/bin/{tool}" for tool in p4lang.TOOLS})
    monkeypatch.setattr(p4lang, "find", lambda: toolchain)
    return toolchain


@pytest.fixture
def no_p4lang(monkeypatch):
    monkeypatch.setattr(p4lang, "find", lambda: None)
