"""The p4c-bm2-ss and simple_switch_grpc command lines, read the way those tools read them.

The option tables below are what the tools document (`p4c-bm2-ss --help`, and for
simple_switch_grpc the general bmv2 options of `--help` before "--" and the target's own options
after it), reduced to the facts a command line depends on: whether an option takes a value and
how the value is attached.  Each command line is parsed with the tool's rules; every option must
be documented and not deprecated, every value well formed, and the positional arguments exactly
what the tool expects.  The tools are stood in for here (fake_p4lang: every tool in /usr/bin,
never run), so this check runs everywhere; the bmv2 tier (test_program.py, the emulation
tests) runs the real tools.
"""

import re

import pytest

from topologies.program import compile_command, compile_program
from topologies.switches import SwitchLaunch, bmv2_command, bmv2_thrift_port
from topologies.spec import parse_topology

# p4c (p4c-bm2-ss): long options take their value as the next word or after "="; one-letter
# options as the next word or attached ("-DAGG_K=8").  VALUE: takes a value; FLAG: does not.
VALUE, FLAG = "value", "flag"
P4C_OPTIONS = {
    "--help": FLAG, "--version": FLAG,
    "-I": VALUE, "-D": VALUE, "-U": VALUE, "-E": FLAG, "--nocpp": FLAG,
    "--std": VALUE, "--target": VALUE, "--arch": VALUE, "--pp": VALUE, "--toJSON": VALUE,
    "-o": VALUE, "--p4runtime-files": VALUE, "--p4runtime-entries-files": VALUE,
    "--p4runtime-format": VALUE, "-T": VALUE, "-v": FLAG,
}
# Accepted but hidden from --help as deprecated: a command line should not rely on them.
P4C_DEPRECATED = {"--p4v", "--p4runtime-file", "--p4runtime-entries-file"}
P4C_STD_VALUES = {"p4-16", "16"}
# The P4Info format is inferred from each file's suffix; these are the documented ones (p4c
# v1.2.4.17 warns that .txt is deprecated in favour of .txtpb).
P4C_P4INFO_SUFFIXES = (".txtpb", ".json", ".bin")

# bmv2's general options (before "--"): boost program_options rules.  OPTIONAL: a value only
# when attached with "=" (a separate word would be taken for the positional JSON file).
OPTIONAL = "optional"
BMV2_OPTIONS = {
    "--help": FLAG, "-h": FLAG, "--interface": VALUE, "-i": VALUE, "--pcap": OPTIONAL,
    "--use-files": VALUE, "--packet-in": VALUE, "--thrift-port": VALUE, "--device-id": VALUE,
    "--nanolog": VALUE, "--log-console": FLAG, "--log-file": VALUE, "--log-level": VALUE,
    "-L": VALUE, "--log-flush": FLAG, "--notifications-addr": VALUE, "--debugger": FLAG,
    "--debugger-addr": VALUE, "--restore-state": VALUE, "--dump-packet-data": VALUE,
    "--version": FLAG, "-v": FLAG, "--json-version": FLAG, "--no-p4": FLAG,
    "--max-port-count": VALUE,
}
# simple_switch_grpc's target options (after "--").
SIMPLE_SWITCH_GRPC_OPTIONS = {
    "--grpc-server-addr": VALUE, "--cpu-port": VALUE, "--drop-port": VALUE,
    "--disable-swap": FLAG, "--egress-spec-init-to-drop": FLAG, "--dp-grpc-server-addr": VALUE,
    "--load-modules": VALUE,
}


def parse_p4c(command):
    """(options as [(name, value)], positional arguments), by p4c's rules."""
    options, positional = [], []
    words = iter(command[1:])
    for word in words:
        if word.startswith("--"):
            name, attached, value = word.partition("=")
        elif word.startswith("-") and len(word) > 1:
            name, value = word[:2], word[2:]
            attached = bool(value)
        else:
            positional.append(word)
            continue
        assert name not in P4C_DEPRECATED, f"{name} is deprecated in p4c"
        assert name in P4C_OPTIONS, f"p4c has no option {name}"
        if P4C_OPTIONS[name] == VALUE:
            if not attached:
                value = next(words, None)
                assert value is not None, f"{name} needs a value"
            options.append((name, value))
        else:
            assert not attached, f"{name} takes no value"
            options.append((name, None))
    return options, positional


def parse_simple_switch_grpc(command):
    """(general options, positional arguments, target options), by bmv2's rules."""
    assert command.count("--") == 1, "target options go after one '--'"
    separator = command.index("--")
    general, positional = [], []
    words = iter(command[1:separator])
    for word in words:
        if not word.startswith("-"):
            positional.append(word)
            continue
        name, attached, value = word.partition("=")
        assert name in BMV2_OPTIONS, f"bmv2 has no option {name}"
        kind = BMV2_OPTIONS[name]
        if kind == VALUE and not attached:
            value = next(words, None)
            assert value is not None and not value.startswith("-"), f"{name} needs a value"
        elif kind == FLAG:
            assert not attached, f"{name} takes no value"
            value = None
        elif kind == OPTIONAL and not attached:
            value = "."
        general.append((name, value))
    target = []
    words = iter(command[separator + 1:])
    for word in words:
        name, attached, value = word.partition("=")
        assert name in SIMPLE_SWITCH_GRPC_OPTIONS, f"simple_switch_grpc has no option {name}"
        if SIMPLE_SWITCH_GRPC_OPTIONS[name] == VALUE and not attached:
            value = next(words, None)
            assert value is not None, f"{name} needs a value"
        target.append((name, value))
    return general, positional, target


def values(options, *names):
    return [value for name, value in options if name in names]


@pytest.fixture(autouse=True)
def tools(fake_p4lang):
    return fake_p4lang


def test_p4c_bm2_ss_command_line(tmp_path, monkeypatch):
    ran = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    monkeypatch.setattr("subprocess.run", lambda command, **kwargs: ran.append(command) or Done())
    program = compile_program("bmv2", str(tmp_path), k=16)
    (command,) = ran
    assert command[0] == "/usr/bin/p4c-bm2-ss"        # the toolchain's, not a PATH lookup
    options, positional = parse_p4c(command)
    assert positional == [program.source]
    assert values(options, "--std") == ["p4-16"]
    assert values(options, "-o") == [program.device_config]
    assert program.device_config.endswith(".json")
    (files,) = values(options, "--p4runtime-files")
    assert files.split(",") == [program.p4info]
    assert program.p4info.endswith(P4C_P4INFO_SUFFIXES)
    assert values(options, "-D") == ["AGG_K=16"]
    assert not values(options, "--target", "--arch")   # p4c-bm2-ss is bmv2 v1model already


def test_p4c_parser_refuses_what_p4c_refuses():
    """The reader above is strict where p4c is: a deprecated or unknown option, a missing value."""
    with pytest.raises(AssertionError, match="--p4v is deprecated"):
        parse_p4c(["p4c-bm2-ss", "--p4v", "16", "main.p4"])
    with pytest.raises(AssertionError, match="p4c has no option --p4info"):
        parse_p4c(["p4c-bm2-ss", "--p4info", "x.txt", "main.p4"])
    with pytest.raises(AssertionError, match="-o needs a value"):
        parse_p4c(["p4c-bm2-ss", "main.p4", "-o"])
    assert parse_p4c(["p4c-bm2-ss", "-DA=1", "-D", "B=2", "--std=p4-16", "m.p4"]) == (
        [("-D", "A=1"), ("-D", "B=2"), ("--std", "p4-16")], ["m.p4"])


def test_p4c_defines_and_std_values():
    command = compile_command("bmv2", "/r/main.p4", "/b/main.json", "/b/main.p4info.txtpb",
                              {"AGG_K": 8, "AGG_SLOTS": 64})
    options, positional = parse_p4c(command)
    assert positional == ["/r/main.p4"]
    assert set(values(options, "--std")) <= P4C_STD_VALUES
    assert values(options, "-D") == ["AGG_K=8", "AGG_SLOTS=64"]
    for define in values(options, "-D"):
        assert re.fullmatch(r"[A-Za-z_]\w*=\S+", define), define


def launch(**overrides):
    fields = dict(name="s3", device_id=2, grpc_port=9561,
                  ports=((1, "s3-eth1"), (2, "s3-eth2"), (7, "s3-eth7")))
    fields.update(overrides)
    return SwitchLaunch(**fields)


@pytest.mark.parametrize("extra", [{}, {"log_file": "/l/s3.log", "pcap_dir": "/p"},
                                   {"program": "/b/main.bmv2.json"}])
def test_simple_switch_grpc_command_line(extra):
    command = bmv2_command(launch(**extra))
    assert command[0] == "/usr/bin/simple_switch_grpc"
    general, positional, target = parse_simple_switch_grpc(command)
    assert values(general, "-i", "--interface") == ["1@s3-eth1", "2@s3-eth2", "7@s3-eth7"]
    assert values(general, "--device-id") == ["2"]
    assert values(general, "--thrift-port") == [str(bmv2_thrift_port(2))]
    (notifications,) = values(general, "--notifications-addr")
    assert re.fullmatch(r"ipc:///\S+\.ipc", notifications) and "9561" in notifications
    assert target == [("--grpc-server-addr", "127.0.0.1:9561")]
    # either the program's JSON as the one positional argument, or --no-p4 and none
    if "program" in extra:
        assert positional == ["/b/main.bmv2.json"] and not values(general, "--no-p4")
    else:
        assert positional == [] and ("--no-p4", None) in general
    if "log_file" in extra:
        assert values(general, "--log-file") == ["/l/s3.log"]
        assert ("--log-flush", None) in general      # bmv2 ignores it without --log-file
        assert values(general, "--pcap") == ["/p"]
    else:
        assert not values(general, "--log-file", "--log-flush", "--pcap")
    assert not values(general, "--log-console")      # exclusive with --log-file in bmv2


def test_simple_switch_grpc_parser_refuses_what_bmv2_refuses():
    with pytest.raises(AssertionError, match="simple_switch_grpc has no option --device-id"):
        parse_simple_switch_grpc(["simple_switch_grpc", "--no-p4", "--", "--device-id", "1"])
    with pytest.raises(AssertionError, match="bmv2 has no option --grpc-server-addr"):
        parse_simple_switch_grpc(["simple_switch_grpc", "--grpc-server-addr", "a:1", "--"])
    # "--pcap DIR" would leave DIR as the positional JSON file
    assert parse_simple_switch_grpc(["simple_switch_grpc", "--pcap", "/p", "--"]) == (
        [("--pcap", ".")], ["/p"], [])


@pytest.mark.parametrize("topo", ["star:4", "leafspine:2,2,3", "fattree:4"])
def test_every_switch_of_a_topology_has_a_valid_command_line(topo):
    from topologies.net import switch_interface
    spec = parse_topology(topo)
    thrift_ports, notifications = set(), set()
    for switch in spec.switches:
        ports = sorted(port for link in spec.links
                       for node, port in ((link.node1, link.port1), (link.node2, link.port2))
                       if node == switch.name)
        command = bmv2_command(SwitchLaunch(
            name=switch.name, device_id=switch.device_id, grpc_port=switch.grpc_port,
            ports=tuple((p, switch_interface(switch.name, p)) for p in ports)))
        general, positional, target = parse_simple_switch_grpc(command)
        interfaces = values(general, "-i", "--interface")
        assert all(re.fullmatch(r"\d+@\S+", i) for i in interfaces), interfaces
        # bmv2 binds each port number once; the drop port (511) is not a data port
        numbers = [int(i.split("@")[0]) for i in interfaces]
        assert len(set(numbers)) == len(numbers) and 511 not in numbers
        assert positional == []
        thrift_ports.update(values(general, "--thrift-port"))
        notifications.update(values(general, "--notifications-addr"))
        assert target == [("--grpc-server-addr", f"127.0.0.1:{switch.grpc_port}")]
    # one Thrift port and one notifications socket per switch
    assert len(thrift_ports) == len(notifications) == len(spec.switches)
