"""The job contract (contracts/jobs.py): the registry of collectives and modes, K's default
per switch kind, and the worker specs, whose command lines parse back into the same spec
with the parsers the hosts' commands use."""

import dataclasses

import pytest

from contracts import jobs
from contracts.cli import UsageError
from contracts.jobs import GlooWorker, HostAlgorithmWorker, InaWorker, TrainWorker


def test_the_registry_says_which_mode_runs_which_collective():
    assert jobs.COLLECTIVES == ("allreduce", "reduce-scatter", "allgather", "broadcast",
                                "reduce")
    assert jobs.mode_collectives("ina") == jobs.COLLECTIVES
    assert jobs.mode_collectives("ring") == ("allreduce", "reduce-scatter", "allgather")
    assert jobs.mode_collectives("binomial-tree") == ("allreduce", "broadcast", "reduce")
    assert jobs.mode_collectives("ps") == jobs.mode_collectives("gloo") == ("allreduce",)
    assert jobs.check_collective("ring", "allgather") is None
    assert jobs.check_collective("ps", "broadcast") == (
        "ps is not supported for the collective broadcast (modes that run it: ina, "
        "binomial-tree)")
    assert jobs.check_collective("ring", "gather") == (
        "unknown collective 'gather' (choose from allreduce, reduce-scatter, allgather, "
        "broadcast, reduce)")


def test_the_host_algorithms_and_the_modes_follow_the_registry():
    from hosts.algorithms import ALGORITHMS, module
    from jobs.modes import MODES
    assert ALGORITHMS == jobs.HOST_ALGORITHMS
    assert tuple(MODES) == jobs.MODES
    assert all(module(name).FORMULA for name in jobs.HOST_ALGORITHMS)


def test_k_defaults_per_switch_kind_are_values_p4src_compiles():
    from contracts.wire import SWITCH_K_VALUES
    assert jobs.default_k("builtin") == 256 and jobs.default_k("bmv2") == 64
    assert all(jobs.default_k(kind) in SWITCH_K_VALUES for kind in ("builtin", "bmv2"))
    # bmv2 grows a packet by at most 512 bytes: its default runs every collective
    assert jobs.default_k("bmv2") * 4 <= 512


SPECS = [
    InaWorker(job=3, rank=1, world=4, elements=1000, dtype="float32", seed=7, window=8,
              timeout_ms=322.0, switch_ip="10.0.255.254", contributor=1, k=128,
              collective="allgather", json="/o/r.json", start_barrier="/o/b"),
    InaWorker(job=0, rank=0, world=1, elements=1, input="v.npy", output="o.npy"),
    HostAlgorithmWorker(algorithm="rabenseifner", rank=2, world=3, peers="a:1,b:1,c:1",
                        elements=10, seed=0, chunk_bytes=4096, timeout_s=33.5),
    GlooWorker(rank=1, world=2, master="10.0.0.1:23000", ifname="h2-eth0", elements=5,
               seed=1, json="-"),
    TrainWorker(mode="ina", rank=0, world=2, master="10.0.0.1:23001", lr=0.05, momentum=0.0,
                hidden=0, precision_check=True, job=1, switch_ip="10.0.255.254",
                contributor=0, timeout_ms=150.0, slowdown=2.5),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: type(spec).__name__)
def test_a_spec_survives_its_command_line(spec):
    assert type(spec).from_argv(spec.to_argv()) == spec


def test_to_argv_writes_set_options_in_field_order_and_leaves_defaults_out():
    spec = InaWorker(job=3, rank=1, world=4, elements=1000, seed=7, timeout_ms=322.0, k=64)
    assert spec.to_argv() == ["--job", "3", "--rank", "1", "--world", "4", "--elements", "1000",
                              "--seed", "7", "--timeout-ms", "322"]
    assert spec.command("/py")[:4] == ["/py", "-m", "hosts", "worker"]
    assert "--precision-check" not in dataclasses.replace(SPECS[-1],
                                                          precision_check=False).to_argv()


def test_the_parsers_are_the_hosts_commands():
    from hosts import allreduce, gloo, train
    from hosts.ina import worker
    assert worker.build_parser().format_help() == InaWorker.parser().format_help()
    assert gloo.build_parser().format_help() == GlooWorker.parser().format_help()
    assert train.build_parser().format_help() == TrainWorker.parser().format_help()
    ring = allreduce.build_parser("ring")
    assert "--algorithm" not in ring.format_help()
    spec = HostAlgorithmWorker.from_argv(["--rank", "0", "--world", "2", "--peers", "a:1,b:1",
                                          "--elements", "4", "--seed", "1"], ring)
    assert spec.algorithm == "ring"


@pytest.mark.parametrize("argv, message", [
    (["--job", "1", "--rank", "0", "--world", "2", "--elements", "4"],
     "python -m hosts worker: one of the arguments --seed --input is required"),
    (["--job", "1", "--rank", "0", "--world", "2", "--elements", "4", "--seed", "1",
      "--input", "x"],
     "python -m hosts worker: argument --input: not allowed with argument --seed"),
    (["--job", "1", "--rank", "0", "--world", "2", "--elements", "0", "--seed", "1"],
     "python -m hosts worker: argument --elements: must be >= 1, got 0"),
])
def test_a_bad_command_line_is_one_usage_error(argv, message):
    with pytest.raises(UsageError) as error:
        InaWorker.from_argv(argv)
    assert str(error.value) == message
