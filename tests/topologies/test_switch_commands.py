"""The builtin and bmv2 switch command lines carry the same ports, device id and gRPC address
(for one switch and for every switch of generated topologies); bmv2 gets a Thrift port each."""

import pytest

from p4switch import p4lang
from topologies.switches import (BuiltinP4Switch, Bmv2Switch, SwitchLaunch, bmv2_command,
                                 bmv2_thrift_port, builtin_command, resolve_switch_kind)


@pytest.fixture(autouse=True)
def tools(fake_p4lang):
    return fake_p4lang


def launch(**overrides):
    values = dict(name="s3", device_id=2, grpc_port=9561,
                  ports=((1, "s3-eth1"), (2, "s3-eth2"), (7, "s3-eth7")))
    values.update(overrides)
    return SwitchLaunch(**values)


def option_values(command, flag):
    """Values of `flag` given as "FLAG VALUE" or "FLAG=VALUE"."""
    separate = [command[i + 1] for i, arg in enumerate(command[:-1]) if arg == flag]
    attached = [arg[len(flag) + 1:] for arg in command if arg.startswith(flag + "=")]
    return separate + attached


def test_builtin_command_line():
    command = builtin_command(launch())
    assert command[1:5] == ["-m", "p4switch", "run", "--no-p4"]
    assert option_values(command, "-i") == ["1@s3-eth1", "2@s3-eth2", "7@s3-eth7"]
    assert option_values(command, "--device-id") == ["2"]
    assert option_values(command, "--grpc-server-addr") == ["127.0.0.1:9561"]
    assert not any(arg.startswith(("--log-file", "--pcap")) for arg in command)


def test_bmv2_command_line():
    command = bmv2_command(launch(log_file="/l/s3.log", pcap_dir="/p"))
    assert command[0] == "/usr/bin/simple_switch_grpc"     # the toolchain's
    # target options (gRPC address) come after "--"
    separator = command.index("--")
    assert command[separator + 1:] == ["--grpc-server-addr", "127.0.0.1:9561"]
    assert command[separator - 1] == "--no-p4"
    assert option_values(command, "--thrift-port") == ["9092"]
    # not bmv2's default ipc:///tmp/bmv2-<device id>-notifications.ipc, shared by every
    # instance with that device id on the machine
    (notifications,) = option_values(command, "--notifications-addr")
    assert notifications.startswith("ipc:///") and notifications.endswith("-9561.ipc")
    assert "bmv2-2-notifications" not in notifications
    assert option_values(command, "--log-file") == ["/l/s3.log"]
    assert "--pcap=/p" in command       # bmv2 takes its optional value only after "="


@pytest.mark.parametrize("extra", [{}, {"log_file": "/l/s3.log", "pcap_dir": "/p"},
                                   {"program": "/b/main.json"}])
def test_targets_agree(extra):
    builtin = builtin_command(launch(**extra))
    bmv2 = bmv2_command(launch(**extra))
    for flag in ("-i", "--device-id", "--grpc-server-addr", "--log-file", "--pcap"):
        assert option_values(builtin, flag) == option_values(bmv2, flag), flag
    if "program" in extra:
        assert "/b/main.json" in builtin and "/b/main.json" in bmv2
        assert "--no-p4" not in builtin + bmv2


def test_classes_use_their_command():
    assert BuiltinP4Switch.command_for is builtin_command
    assert Bmv2Switch.command_for is bmv2_command


def test_auto_is_the_builtin_switch_even_with_bmv2_installed():
    """A toolchain on PATH (or beside the repository, as in CI) never moves a command, or
    the test suite, to bmv2: that takes --switch bmv2."""
    assert resolve_switch_kind("auto") == "builtin"
    assert resolve_switch_kind("builtin") == "builtin"
    assert resolve_switch_kind("bmv2") == "bmv2"
    with pytest.raises(ValueError, match="unknown switch"):
        resolve_switch_kind("ovs")


def test_bmv2_missing_is_one_line(no_p4lang):
    assert resolve_switch_kind("auto") == "builtin"
    with pytest.raises(ValueError) as info:
        resolve_switch_kind("bmv2")
    assert str(info.value) == ("--switch bmv2: p4lang toolchain: p4c-bm2-ss, simple_switch_grpc "
                               "not found (looked in $P4LANG_HOME, ../shared/p4lang, PATH) "
                               "(use --switch builtin)")


def test_bmv2_half_installed_names_what_is_missing(monkeypatch):
    only_switch = p4lang.Toolchain("PATH", None, {"simple_switch_grpc": "/usr/bin/ssg"})
    monkeypatch.setattr(p4lang, "find", lambda: only_switch)
    with pytest.raises(ValueError, match=r"^--switch bmv2: p4lang toolchain: p4c-bm2-ss not found"):
        resolve_switch_kind("bmv2")


def test_bmv2_runs_in_the_toolchain_environment(fake_p4lang):
    switch = Bmv2Switch.__new__(Bmv2Switch)       # no Mininet node: only its environment
    assert switch.environment() == fake_p4lang.environment()
    assert BuiltinP4Switch.__new__(BuiltinP4Switch).environment() is None


def spec_launches(topo: str) -> list:
    """The SwitchLaunch of every switch of a topology, as Network builds them: the switch's
    ports from the spec's links, interfaces named <switch>-eth<port>."""
    from topologies.net import switch_interface
    from topologies.spec import parse_topology
    spec = parse_topology(topo)
    launches = []
    for switch in spec.switches:
        ports = sorted(port for link in spec.links
                       for node, port in ((link.node1, link.port1), (link.node2, link.port2))
                       if node == switch.name)
        launches.append(SwitchLaunch(
            name=switch.name, device_id=switch.device_id, grpc_port=switch.grpc_port,
            ports=tuple((p, switch_interface(switch.name, p)) for p in ports),
            log_file=f"/logs/{switch.name}.log", pcap_dir="/pcaps"))
    return launches


@pytest.mark.parametrize("topo", ["star:4", "fattree:4", "leafspine:2,2,3"])
def test_every_switch_of_a_topology_agrees(topo):
    launches = spec_launches(topo)
    for launch_ in launches:
        builtin, bmv2 = builtin_command(launch_), bmv2_command(launch_)
        for flag in ("-i", "--device-id", "--grpc-server-addr", "--log-file", "--pcap"):
            assert option_values(builtin, flag) == option_values(bmv2, flag), (launch_.name, flag)
        assert option_values(bmv2, "--device-id") == [str(launch_.device_id)]
        assert option_values(bmv2, "--grpc-server-addr") == [f"127.0.0.1:{launch_.grpc_port}"]
        assert option_values(bmv2, "--thrift-port") == [str(bmv2_thrift_port(launch_.device_id))]
    # every switch has its own device id, gRPC port and Thrift port, and no port is shared
    grpc = [l.grpc_port for l in launches]
    thrift = [bmv2_thrift_port(l.device_id) for l in launches]
    assert len(set(grpc)) == len(set(thrift)) == len(launches)
    assert not set(grpc) & set(thrift)
    assert sorted(l.device_id for l in launches) == list(range(len(launches)))


def test_running_status_read_from_the_status_file(tmp_path):
    """What a built-in switch says it runs (p4switch run --status-file): its back end and its
    packet threads (a status without "threads" is from a single-threaded switch: 1); no
    status written: "unknown" and None.  bmv2 says bmv2 and counts no threads of ours."""
    switch = object.__new__(BuiltinP4Switch)     # no Mininet node: only the file is read
    switch.name, switch.output_dir = "s1", str(tmp_path)
    assert (switch.running_backend(), switch.running_threads()) == ("unknown", None)
    (tmp_path / "s1.status.json").write_text('{"backend": "c", "threads": 4}')
    assert (switch.running_backend(), switch.running_threads()) == ("c", 4)
    (tmp_path / "s1.status.json").write_text('{"backend": "python"}')
    assert (switch.running_backend(), switch.running_threads()) == ("python", 1)
    (tmp_path / "s1.status.json").write_text('not json')
    assert (switch.running_backend(), switch.running_threads()) == ("unknown", None)
    bmv2 = object.__new__(Bmv2Switch)
    assert (bmv2.running_backend(), bmv2.running_threads()) == ("bmv2", None)
