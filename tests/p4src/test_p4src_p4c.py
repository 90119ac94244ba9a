"""p4src/main.p4 on real p4c (p4c-bm2-ss, bmv2's compiler): it compiles at every K the project
supports with no error and no warning, run as a user runs it (no include path of p4c's own:
main.p4 brings the repository's core.p4 and v1model.p4), and the P4Info p4c writes equals ours
entity by entity (ids, names, annotations, match fields, action refs, params, sizes) and the
one p4c writes with its own core.p4 and v1model.p4."""

import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from contracts.wire import SWITCH_K_VALUES
from p4switch import compile_file
from p4switch.p4lang import P4C

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MAIN_P4 = os.path.join(REPO, "p4src", "main.p4")
sys.path.insert(0, os.path.join(REPO, "scripts"))
from p4info_diff import differences, parse  # noqa: E402

pytestmark = pytest.mark.bmv2


@pytest.fixture(scope="module")
def p4c_builds(p4lang_toolchain, tmp_path_factory):
    """{K: (exit code, p4c's stderr and stdout, P4Info text)} for every supported K, two
    compiles at a time."""
    out = tmp_path_factory.mktemp("p4c")
    env = p4lang_toolchain.environment()
    env.pop("P4C_16_INCLUDE_PATH", None)      # as a user runs p4c: no include path given

    def build(k):
        return k, p4c(p4lang_toolchain, MAIN_P4, k, out / f"main{k}", env)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, SWITCH_K_VALUES))


def p4c(toolchain, source, k, stem, env):
    """(exit code, p4c's stderr and stdout, P4Info text) of `p4c-bm2-ss -I p4src`."""
    p4info = stem.with_suffix(".p4info.txtpb")
    result = subprocess.run(
        [toolchain.path(P4C), "--std", "p4-16", "--arch", "v1model", "-I", "p4src",
         f"-DAGG_K={k}", "-o", str(stem.with_suffix(".json")), "--p4runtime-files", str(p4info),
         str(source)],
        capture_output=True, text=True, env=env, cwd=REPO)
    return result.returncode, result.stderr + result.stdout, (
        p4info.read_text() if p4info.exists() else "")


@pytest.mark.parametrize("k", SWITCH_K_VALUES)
def test_p4c_compiles_p4src_without_error_or_warning(p4c_builds, k):
    code, output, _ = p4c_builds[k]
    assert (code, output) == (0, "")


@pytest.mark.parametrize("k", SWITCH_K_VALUES)
def test_our_p4info_equals_p4cs(p4c_builds, k):
    _, _, text = p4c_builds[k]
    ours = compile_file(MAIN_P4, defines={"AGG_K": str(k)}).p4info
    assert differences(parse(text), ours) == []


def test_our_headers_give_the_p4info_of_p4cs_own(p4lang_toolchain, p4c_builds, tmp_path):
    """main.p4 with p4c's own core.p4 and v1model.p4 (its include path) instead of ours:
    the same P4Info to the byte."""
    text = pathlib.Path(MAIN_P4).read_text()
    ours = ('#include "../p4switch/include/core.p4"', '#include "../p4switch/include/v1model.p4"')
    assert all(line in text for line in ours)
    theirs = tmp_path / "main.p4"
    theirs.write_text(text.replace(ours[0], "#include <core.p4>")
                      .replace(ours[1], "#include <v1model.p4>"))
    code, output, p4info = p4c(p4lang_toolchain, theirs, 64, tmp_path / "theirs",
                               p4lang_toolchain.environment())
    assert (code, output) == (0, "")
    assert p4info == p4c_builds[64][2] != ""


def test_the_comparison_would_see_a_changed_table(p4c_builds):
    """The P4Info check can fail: a table p4c sized otherwise is a difference."""
    _, _, text = p4c_builds[64]
    ours = compile_file(MAIN_P4, defines={"AGG_K": "64"}).p4info
    changed = parse(text.replace("size: 4096", "size: 4095", 1))
    assert differences(changed, ours) != []
