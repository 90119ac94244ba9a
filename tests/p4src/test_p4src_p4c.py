"""p4src/main.p4 on real p4c (p4c-bm2-ss, bmv2's compiler): it compiles at every K the project
supports with no error and no warning, and the P4Info p4c writes equals ours entity by entity
(ids, names, annotations, match fields, action refs, params, sizes)."""

import os
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

    def build(k):
        p4info = out / f"main{k}.p4info.txtpb"
        result = subprocess.run(
            [p4lang_toolchain.path(P4C), "--std", "p4-16", "--arch", "v1model",
             f"-DAGG_K={k}", "-o", str(out / f"main{k}.json"),
             "--p4runtime-files", str(p4info), MAIN_P4],
            capture_output=True, text=True, env=env, cwd=REPO)
        text = p4info.read_text() if p4info.exists() else ""
        return k, (result.returncode, result.stderr + result.stdout, text)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, SWITCH_K_VALUES))


@pytest.mark.parametrize("k", SWITCH_K_VALUES)
def test_p4c_compiles_p4src_without_error_or_warning(p4c_builds, k):
    code, output, _ = p4c_builds[k]
    assert (code, output) == (0, "")


@pytest.mark.parametrize("k", SWITCH_K_VALUES)
def test_our_p4info_equals_p4cs(p4c_builds, k):
    _, _, text = p4c_builds[k]
    ours = compile_file(MAIN_P4, defines={"AGG_K": str(k)}).p4info
    assert differences(parse(text), ours) == []


def test_the_comparison_would_see_a_changed_table(p4c_builds):
    """The P4Info check can fail: a table p4c sized otherwise is a difference."""
    _, _, text = p4c_builds[64]
    ours = compile_file(MAIN_P4, defines={"AGG_K": "64"}).p4info
    changed = parse(text.replace("size: 4096", "size: 4095", 1))
    assert differences(changed, ours) != []
