"""Compile command lines for both targets, and compile errors as one line."""

import pytest

from topologies.program import CompileFailed, compile_command, compile_program


def test_builtin_compile_command():
    command = compile_command("builtin", "/r/p4src/main.p4", "/b/main.json", "/b/main.txt",
                              {"AGG_K": 64})
    assert command[1:] == ["-m", "p4switch", "compile", "/r/p4src/main.p4", "-o", "/b/main.json",
                           "--p4runtime-files", "/b/main.txt", "-DAGG_K=64"]


def test_bmv2_compile_command(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/" + name)
    command = compile_command("bmv2", "/r/main.p4", "/b/main.json", "/b/main.txt", {"AGG_K": 8})
    assert command == ["p4c-bm2-ss", "-o", "/b/main.json", "--p4runtime-files", "/b/main.txt",
                       "-DAGG_K=8", "/r/main.p4"]
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(CompileFailed, match="p4c-bm2-ss is not on PATH"):
        compile_command("bmv2", "/r/main.p4", "/b/main.json", "/b/main.txt", {})


def test_compile_error_is_one_line(tmp_path):
    source = tmp_path / "broken.p4"
    source.write_text("control C() { apply { x = ; } }\n")
    with pytest.raises(CompileFailed) as info:
        compile_program("builtin", str(tmp_path / "build"), source=str(source))
    message = str(info.value)
    assert message.startswith("compiling ") and "broken.p4" in message
    assert "\n" not in message


def test_compiles_main_program(tmp_path):
    program = compile_program("builtin", str(tmp_path), k=8)
    assert program.k == 8
    from controller import Pipeline
    pipeline = Pipeline.from_files(program.p4info, program.device_config)
    tables = [t.preamble.name for t in pipeline.p4info.tables]
    assert "AggIngress.forwarding.ipv4_routes" in tables
    assert pipeline.device_config
