"""Compile command lines for both targets, and compile errors as one line."""

import pytest

from topologies.program import CompileFailed, compile_command, compile_program
from topologies.switches import REPO


def test_builtin_compile_command():
    command = compile_command("builtin", "/r/p4src/main.p4", "/b/main.json", "/b/main.txt",
                              {"AGG_K": 64})
    assert command[1:] == ["-m", "p4switch", "compile", "/r/p4src/main.p4", "-o", "/b/main.json",
                           "--p4runtime-files", "/b/main.txt", "-DAGG_K=64"]


def test_bmv2_compile_command(fake_p4lang, monkeypatch):
    command = compile_command("bmv2", "/r/main.p4", "/b/main.json", "/b/main.txtpb",
                              {"AGG_K": 8})
    assert command == ["/usr/bin/p4c-bm2-ss", "--std", "p4-16", "--p4runtime-files",
                       "/b/main.txtpb", "-o", "/b/main.json", "-DAGG_K=8", "/r/main.p4"]


def test_bmv2_compiler_missing_is_one_line(no_p4lang):
    with pytest.raises(CompileFailed) as info:
        compile_command("bmv2", "/r/main.p4", "/b/main.json", "/b/main.txtpb", {})
    assert str(info.value) == ("p4lang toolchain: p4c-bm2-ss not found (looked in "
                               "$P4LANG_HOME, ../shared/p4lang, PATH) (needed for --switch bmv2)")


def test_compile_error_is_one_line(tmp_path):
    source = tmp_path / "broken.p4"
    source.write_text("control C() { apply { x = ; } }\n")
    with pytest.raises(CompileFailed) as info:
        compile_program("builtin", str(tmp_path / "build"), source=str(source))
    message = str(info.value)
    assert message.startswith("compiling ") and "broken.p4" in message
    assert "\n" not in message


def test_bmv2_build_files_are_named_after_the_target(fake_p4lang, monkeypatch, tmp_path):
    """compile_program runs the toolchain's p4c-bm2-ss, in its environment, on p4src/main.p4
    into build/main.bmv2.{json,p4info.txtpb} (recorded here; test_p4c_bm2_ss_compiles_p4src
    runs it)."""
    ran = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    def record(command, **kwargs):
        ran.append((command, kwargs["cwd"]))
        assert kwargs["env"] == fake_p4lang.environment()
        return Done()

    monkeypatch.setattr("subprocess.run", record)
    program = compile_program("bmv2", str(tmp_path), k=16)
    (command, cwd), = ran
    assert program.device_config == str(tmp_path / "main.bmv2.json")
    assert program.p4info == str(tmp_path / "main.bmv2.p4info.txtpb")
    assert command == ["/usr/bin/p4c-bm2-ss", "--std", "p4-16", "--p4runtime-files",
                       program.p4info,
                       "-o", program.device_config, "-DAGG_K=16", program.source]
    assert program.source.endswith("p4src/main.p4") and cwd == REPO


def test_bmv2_compile_error_is_one_line(fake_p4lang, monkeypatch, tmp_path):

    class Failed:
        returncode = 1
        stdout = ""
        stderr = ("p4src/agg_values.p4(20): [--Werror=type-error] error: 'x': cannot be ...\n"
                  "        int<32> x = y;\n")

    monkeypatch.setattr("subprocess.run", lambda command, **kwargs: Failed())
    with pytest.raises(CompileFailed) as info:
        compile_program("bmv2", str(tmp_path))
    assert str(info.value) == ("compiling p4src/main.p4 failed: p4src/agg_values.p4(20): "
                               "[--Werror=type-error] error: 'x': cannot be ...")


def test_compiles_main_program(tmp_path):
    program = compile_program("builtin", str(tmp_path), k=8)
    assert program.k == 8
    assert program.p4info.endswith("main.builtin.p4info.txtpb")
    from controller import Pipeline
    pipeline = Pipeline.from_files(program.p4info, program.device_config)
    tables = [t.preamble.name for t in pipeline.p4info.tables]
    assert "AggIngress.forwarding.ipv4_routes" in tables
    assert pipeline.device_config


@pytest.mark.bmv2
def test_p4c_bm2_ss_compiles_p4src(p4lang_toolchain, tmp_path):
    """The real p4c accepts p4src/main.p4 unchanged, and its P4Info names the same tables,
    actions, registers and counters as p4switch's."""
    from controller import Pipeline
    bmv2 = compile_program("bmv2", str(tmp_path), k=8)
    builtin = compile_program("builtin", str(tmp_path), k=8)
    infos = [Pipeline.from_files(p.p4info, p.device_config).p4info for p in (bmv2, builtin)]
    for kind in ("tables", "actions", "registers", "counters"):
        names = [sorted(e.preamble.name for e in getattr(info, kind)) for info in infos]
        assert names[0] == names[1], kind
    assert infos[0].registers and infos[0].counters
