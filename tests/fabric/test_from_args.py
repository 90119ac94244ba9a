"""Fabric.from_args: what each command's options set on the fabric it builds (nothing starts)."""

from types import SimpleNamespace

from controller import Flowlets
from experiments.compare import build_parser as compare_parser
from fabric import Fabric, requested
from lab.command import build_parser as lab_parser
from topologies.spec import parse_topology


def test_lab_options_reach_the_fabric_and_its_network(tmp_path):
    args = lab_parser().parse_args(["--topo", "star:2", "--k", "32", "--switch-logs",
                                    "--no-restart", "--flowlet-gap-us", "500",
                                    "--flowlet-max-bytes", "9000", "--bw", "10"])
    fabric = Fabric.from_args(parse_topology(args.topo), "builtin", args, str(tmp_path),
                              pcap_dir=str(tmp_path / "pcaps"), impair_seed=7)
    assert (fabric.k, fabric.flowlets) == (32, Flowlets(500, 9000))
    network = fabric.network
    assert (network.trace_logs, network.supervise) == (True, False)
    assert (network.output_dir, network.pcap_dir) == (str(tmp_path), str(tmp_path / "pcaps"))


def test_compare_defaults_supervise_and_route_per_flow(tmp_path):
    args = compare_parser().parse_args(["--topo", "star:2", "--elements", "100",
                                        "--out", str(tmp_path)])
    fabric = Fabric.from_args(parse_topology(args.topo), "builtin", args, str(tmp_path))
    assert (fabric.flowlets, fabric.network.trace_logs, fabric.network.supervise) == \
        (Flowlets(0, 0), False, True)
    assert fabric.network.pcap_dir is None


def test_a_command_without_the_options_gets_fabric_defaults(tmp_path):
    """soak takes only --k of them."""
    fabric = Fabric.from_args(parse_topology("star:2"), "builtin", SimpleNamespace(k=16),
                              str(tmp_path))
    assert (fabric.k, fabric.flowlets) == (16, Flowlets())
    assert (fabric.network.trace_logs, fabric.network.supervise) == (False, True)


def test_an_unset_k_is_the_switch_kinds_default():
    """compare and the lab leave --k unset; fabric.requested makes it the switch kind's
    default (contracts.jobs.default_k), and a --k given stays."""
    args = compare_parser().parse_args(["--topo", "star:2", "--elements", "100"])
    assert args.k is None
    requested(args)
    assert args.k == 256
    args = lab_parser().parse_args(["--topo", "star:2", "--k", "64"])
    requested(args)
    assert args.k == 64
    # the XDP back end takes the same default (p4src loads at K = 256 in the kernel)
    args = compare_parser().parse_args(["--topo", "star:2", "--elements", "100",
                                        "--switch-backend", "xdp"])
    requested(args)
    assert args.k == 256


def test_an_unset_window_is_the_links_default():
    """fabric.requested makes an unset --window contracts.wire.default_window of the links and
    the resolved K; a --window given stays."""
    def window(parser, *options):
        args = parser().parse_args(["--topo", "star:2", *options])
        requested(args)
        return args.window

    assert window(compare_parser, "--elements", "9", "--bw", "100") == 16     # K = 256
    assert window(compare_parser, "--elements", "9", "--bw", "100", "--k", "64") == 32
    assert window(compare_parser, "--elements", "9", "--bw", "100", "--delay", "1") == 32
    assert window(compare_parser, "--elements", "9") == 32                   # unshaped
    assert window(compare_parser, "--elements", "9", "--bw", "100", "--window", "8") == 8
    assert window(lab_parser, "--bw", "10") == 16
