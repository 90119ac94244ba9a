"""From a command's options to the fabric it builds (nothing starts): the typed requests of
contracts/requests.py, fabric.requested (K and the window resolved) and Fabric.from_request."""

import pytest

from contracts.cli import UsageError
from contracts.requests import FabricRequest, JobRequest, LinkSettings
from controller import Flowlets
from experiments.compare import build_parser as compare_parser
from fabric import Fabric, requested
from lab.command import build_parser as lab_parser
from topologies.spec import parse_topology


def requests_of(parser, *options):
    args = parser().parse_args(["--topo", "star:2", *options])
    return FabricRequest.from_options(args), JobRequest.from_options(args, modes=())


def test_lab_options_reach_the_fabric_and_its_network(tmp_path):
    request, job = requests_of(lab_parser, "--k", "32", "--switch-logs", "--no-restart",
                               "--flowlet-gap-us", "500", "--flowlet-max-bytes", "9000",
                               "--bw", "10")
    assert request.links == LinkSettings(bw=10.0)
    fabric = Fabric.from_request(parse_topology(request.topo), "builtin", request, job.k,
                                 str(tmp_path), pcap_dir=str(tmp_path / "pcaps"), impair_seed=7)
    assert (fabric.k, fabric.flowlets, fabric.request) == (32, Flowlets(500, 9000), request)
    network = fabric.network
    assert (network.trace_logs, network.supervise) == (True, False)
    assert (network.output_dir, network.pcap_dir) == (str(tmp_path), str(tmp_path / "pcaps"))


def test_compare_defaults_supervise_and_route_per_flow(tmp_path):
    request, _ = requests_of(compare_parser, "--elements", "100", "--out", str(tmp_path))
    fabric = Fabric.from_request(parse_topology(request.topo), "builtin", request, 64,
                                 str(tmp_path))
    assert (fabric.flowlets, fabric.network.trace_logs, fabric.network.supervise) == \
        (Flowlets(0, 0), False, True)
    assert fabric.network.pcap_dir is None


def test_a_request_without_the_options_gets_fabric_defaults(tmp_path):
    """soak asks for its topology and switch only."""
    fabric = Fabric.from_request(parse_topology("star:2"), "builtin",
                                 FabricRequest(topo="star:2", switch="builtin"), 16,
                                 str(tmp_path))
    assert (fabric.k, fabric.flowlets) == (16, Flowlets())
    assert (fabric.network.trace_logs, fabric.network.supervise) == (False, True)


def test_an_unset_k_is_the_switch_kinds_default():
    """compare and the lab leave --k unset; fabric.requested resolves it to the switch kind's
    default (contracts.jobs.default_k) in a new request, and a --k given stays."""
    request, job = requests_of(compare_parser, "--elements", "100")
    assert job.k is None
    assert requested(request, job)[3].k == 256
    assert job.k is None                       # the request itself is not changed
    assert requested(*requests_of(lab_parser, "--k", "64"))[3].k == 64
    # the XDP back end takes the same default (p4src loads at K = 256 in the kernel)
    assert requested(*requests_of(compare_parser, "--elements", "100",
                                  "--switch-backend", "xdp"))[3].k == 256


def test_an_unset_window_is_the_links_default():
    """fabric.requested makes an unset --window contracts.wire.default_window of the links and
    the resolved K; a --window given stays."""
    def window(parser, *options):
        return requested(*requests_of(parser, *options))[3].window

    assert window(compare_parser, "--elements", "9", "--bw", "100") == 16     # K = 256
    assert window(compare_parser, "--elements", "9", "--bw", "100", "--k", "64") == 32
    assert window(compare_parser, "--elements", "9", "--bw", "100", "--delay", "1") == 32
    assert window(compare_parser, "--elements", "9") == 32                   # unshaped
    assert window(compare_parser, "--elements", "9", "--bw", "100", "--window", "8") == 8
    assert window(lab_parser, "--bw", "10") == 16


@pytest.mark.parametrize("options, message", [
    (["--k", "3"], "--k 3: p4src is built for K = 1, 2, 4, 8, 16, 32, 64, 128 or 256 values "
                   "per packet"),
    (["--window", "70000"], "--window 70000: a job's slots are 1..65535 (the switch counts "
                            "them in 16 bits)"),
])
def test_a_request_that_cannot_run_is_one_usage_error(options, message):
    args = compare_parser().parse_args(["--topo", "star:2", "--elements", "9", *options])
    with pytest.raises(UsageError) as refused:
        JobRequest.from_options(args, modes=("ina",))
    assert str(refused.value) == message
    with pytest.raises(ValueError, match="^--"):        # built directly: ValueError, same text
        JobRequest(k=int(options[1])) if options[0] == "--k" else JobRequest(window=70000)


def test_the_cluster_options_become_one_request():
    request, _ = requests_of(compare_parser, "--elements", "9", "--cluster", "a,b",
                             "--placement", "switchbin", "--tunnel", "gre")
    assert (request.cluster.servers, request.cluster.placement, request.cluster.tunnel) == \
        ("a,b", "switchbin", "gre")
    assert requests_of(compare_parser, "--elements", "9")[0].cluster is None


def test_an_unknown_design_or_collective_is_refused_by_the_request():
    with pytest.raises(ValueError,
                       match="^unknown design 'sharp' \\(choose from ina, switchml, atp\\)$"):
        JobRequest(design="sharp")
    with pytest.raises(ValueError, match="^unknown collective 'scan'"):
        JobRequest(collective="scan")
