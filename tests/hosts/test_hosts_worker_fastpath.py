"""The worker's per-packet fast paths (hosts/ina/engine.py, hosts/ina/worker.py, hosts/ina/fastio.py):
packets built from values already in network byte order, results copied as bytes, deadlines
in a heap, the one-block quantizer, batched recvmmsg/sendmmsg and its pure-Python fallback,
and the UDP loop that drains the socket in batches.  The switch is the TEST DOUBLE
`ReferenceSwitch` (tests/hosts/agg_network.py)."""

import os
import socket
import threading

import numpy as np
import pytest

from agg_network import ReferenceSwitch, UdpSwitchBridge, float_inputs, int_inputs, make_engines
from hosts.ina import engine_native, fastio, quantize, worker
from hosts.ina.engine import BlockFloatSchedule
from contracts.wire import MSG_RESULT, worker_port
from hosts.ina.protocol import AggHeader, AggPacket


def result_for(packet_bytes, values, exponent=0):
    """The switch's result for one of the engine's contributions, carrying `values`."""
    h = AggPacket.unpack(packet_bytes).header
    header = AggHeader(msg_type=MSG_RESULT, version=h.version, job_id=h.job_id, slot=h.slot,
                       contributor=h.contributor, chunk_offset=h.chunk_offset,
                       num_elements=h.num_elements, exponent=exponent)
    return AggPacket(header, np.asarray(values, np.int32)).pack()


def test_packets_match_the_protocol_codec():
    data = np.arange(-40, 40, dtype=np.int32) * 1000003
    engine = make_engines([data, data], k=8, window=3)[1]
    for payload in engine.start(0.0):
        packet = AggPacket.unpack(payload)
        assert isinstance(payload, bytes)
        assert AggPacket(packet.header, packet.values).pack() == payload     # canonical bytes
        offset = packet.header.chunk_offset
        assert packet.values.tolist() == data[offset:offset + 8].tolist()
        assert packet.header.contributor == 1


@pytest.mark.parametrize("buffer", [bytes, bytearray, memoryview])
def test_results_from_any_buffer_are_copied_not_kept(buffer):
    data = np.arange(16, dtype=np.int32)
    engine = make_engines([data], k=8, window=2)[0]
    first, second = engine.start(0.0)
    closing = []
    for packet, offset in ((first, 0), (second, 8)):
        raw = bytearray(result_for(packet, data[offset:offset + 8] * 3))
        closing += engine.on_packet(buffer(raw), 0.001)      # each slot's closing round
        raw[16:] = bytes(len(raw) - 16)           # the transport may reuse its buffer
    assert [AggPacket.unpack(p).header.chunk_offset for p in closing] == [8, 16]
    for packet in closing:
        assert engine.on_packet(buffer(result_for(packet, np.ones(8))), 0.002) == []
    assert engine.done and engine.result().tolist() == (data * 3).tolist()


def test_wrong_length_and_unknown_slot_are_ignored():
    data = np.arange(8, dtype=np.int32)
    engine = make_engines([data], k=8, window=1)[0]
    (packet,) = engine.start(0.0)
    good = result_for(packet, data)
    for bad in (good[:-4], good + b"\0\0\0\0", good[:16], good[:15]):
        assert engine.on_packet(bad, 0.0) == []
    assert engine.stats.packets_ignored == 4 and not engine.done
    (closing,) = engine.on_packet(good, 0.0)
    assert not engine.done
    engine.on_packet(result_for(closing, np.zeros(8)), 0.0)
    assert engine.done


def test_timers_skip_answered_rounds_and_fire_earliest_first():
    data = np.arange(64, dtype=np.int32)
    engine = make_engines([data], k=8, window=4)[0]
    packets = engine.start(0.0)                       # all four deadlines at 0.01
    engine.on_packet(result_for(packets[1], data[8:16]), 0.004)   # slot 1 -> round 5 at 0.004
    assert engine.next_deadline() == pytest.approx(0.01)
    resent = engine.on_timer(0.01)                    # slots 0, 2, 3; slot 1's old entry skipped
    assert [AggPacket.unpack(p).header.slot for p in resent] == [0, 2, 3]
    assert resent == [packets[0], packets[2], packets[3]]          # unchanged bytes
    timeout = engine.timer.timeout                     # sampled from slot 1's 4 ms round
    assert engine.next_deadline() == pytest.approx(0.004 + timeout)
    assert engine.on_timer(0.004 + timeout - 1e-9) == []
    (late,) = engine.on_timer(0.004 + timeout)
    assert AggPacket.unpack(late).header.chunk_offset == 40       # round 5 of slot 1
    assert engine.stats.retransmissions == 4


@pytest.mark.parametrize("world", [1, 2, 3, 8, 31, 1000])
def test_one_block_quantizer_equals_quantize(world):
    rng = np.random.default_rng(world)
    magnitudes = 2.0 ** rng.integers(-150, 127, size=2048)
    data = np.clip(rng.standard_normal(2048) * magnitudes, -3.4e38, 3.4e38).astype(np.float32)
    data[::7], data[::11], data[::13] = np.float32(3.4e38), np.float32(1e-45), 0
    schedule = BlockFloatSchedule(data, 16, world, 4)
    for block in range(schedule.block_count):
        schedule._agreed[block] = min(255, int(schedule._local_exponents[block]) + block % 3)
        expected = quantize.quantize(schedule._blocks[block:block + 1],
                                     schedule._agreed[block:block + 1], world)[0]
        assert schedule.quantized(block).dtype == np.dtype(">i4")
        assert schedule.quantized(block).astype(np.int32).tolist() == expected.tolist()


def test_one_block_quantizer_refuses_an_exponent_below_the_values():
    schedule = BlockFloatSchedule(np.full(8, 100.0, np.float32), 8, 2, 1)
    schedule._agreed[0] = 127 + 6                      # 100 >= 2**6
    with pytest.raises(ValueError, match="exceeds its block's agreed exponent"):
        schedule.quantized(0)


# ---- the UDP loop, in-process ---------------------------------------------------------------
needs_fastio = pytest.mark.requires(missing=fastio.unavailable_reason() and
                                    f"no batch I/O helper: {fastio.unavailable_reason()}")


needs_c_engine = pytest.mark.requires(missing=engine_native.unavailable_reason() and
                                      f"no C engine: {engine_native.unavailable_reason()}")


@pytest.mark.parametrize("batch_io", [pytest.param(True, marks=needs_fastio), False,
                                      pytest.param("c", marks=needs_c_engine)],
                         ids=["recvmmsg", "recvfrom", "c-engine"])
@pytest.mark.parametrize("drain_batch,dtype", [(1, "int32"), (3, "float32"), (256, "int32")])
def test_udp_loop_exact_with_drops_foreign_datagrams_and_any_drain_batch(
        monkeypatch, drain_batch, dtype, batch_io):
    """batch_io "c": the C engine's own loop (hosts/ina/engine_native.c), Python engines else."""
    monkeypatch.setattr(worker, "DRAIN_BATCH", drain_batch)
    world, k, window = 3, 8, 4
    job = 5000 + (os.getpid() + 7 * drain_batch + {True: 1, False: 0, "c": 2}[batch_io]) % 20000
    inputs = int_inputs(world, 500, 7) if dtype == "int32" else float_inputs(world, 500, 7)
    # 200 retries (about 16 s at the 80 ms cap): four threads share one interpreter here, and
    # a loaded machine held one of them back for more than 3 s (40 retries) more than once
    engines = make_engines(inputs, k=k, window=window, job=job, max_retries=200)
    if batch_io == "c":
        engines = [engine_native.NativeEngine(e.schedule, e.config) for e in engines]
    bridge = UdpSwitchBridge(ReferenceSwitch(job_id=job, fan_in=world, window=window, k=k),
                             world, worker_port(job), drop_every=6)
    transports = [worker.UdpTransport(f"127.0.0.{10 + rank}", worker_port(job), bridge.address,
                                      batch_io=batch_io) for rank in range(world)]
    assert all((t.batch_lib is not None) == bool(batch_io) for t in transports)
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for rank in range(world):          # queued before the run: counted as foreign, not used
        for _ in range(2):
            stranger.sendto(b"not from the switch", (f"127.0.0.{10 + rank}", worker_port(job)))
    stranger.close()
    for rank in range(world):          # from the switch's address but no result: ignored,
        for junk in (b"\x20" * 3000, b"x"):  # the long one longer than a batch slot
            bridge.sock.sendto(junk, (f"127.0.0.{10 + rank}", worker_port(job)))
    errors = []

    def run(transport, engine):
        try:
            transport.run(engine)
        except Exception as exc:       # reported below; a thread must not swallow it
            errors.append(exc)

    bridge.start()
    threads = [threading.Thread(target=run, args=pair) for pair in zip(transports, engines)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        bridge.stop()
        for transport in transports:
            transport.close()
    assert not errors and all(engine.done for engine in engines)
    if dtype == "int32":
        expected = np.sum(inputs, axis=0, dtype=np.int64).tolist()
        assert all(engine.result().tolist() == expected for engine in engines)
    else:
        exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
        for engine in engines:
            error = np.abs(engine.result().astype(np.float64) - exact)
            assert np.all(error <= engine.schedule.error_bound())
    assert sum(engine.stats.retransmissions for engine in engines) > 0
    for transport, engine in zip(transports, engines):
        assert transport.stats.packets_foreign == 2
        assert engine.stats.packets_ignored >= 2
        assert transport.stats.packets_received == (engine.stats.results_accepted
                                                    + engine.stats.packets_ignored)


# ---- hosts/ina/fastio.py ------------------------------------------------------------------------
@needs_fastio
def test_batch_socket_moves_datagrams_with_lengths_sources_and_cut_ones():
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    senders = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for sender in senders:
        sender.bind(("127.0.0.1", 0))
    try:
        batch = fastio.BatchSocket(fastio.load(), receiver, slot_size=64, batch=4)
        assert batch.receive() == ([], [], [])                 # nothing waiting: no blocking
        sent = [(0, b"a" * 10), (1, b"b" * 64), (0, b"c" * 100), (1, b""), (0, b"d" * 3)]
        for index, payload in sent:
            senders[index].sendto(payload, receiver.getsockname())
        lengths, addresses, ports = batch.receive()               # the first four
        view = batch.received
        assert bytes(view[0:10]) == b"a" * 10 and bytes(view[64:128]) == b"b" * 64
        assert bytes(view[128:192]) == b"c" * 64                  # cut at the slot
        more = batch.receive()                                    # the fifth, in slot 0
        assert bytes(view[0:3]) == b"d" * 3
        assert lengths + more[0] == [10, 64, 100, 0, 3]           # real lengths, 100 > slot
        assert set(addresses + more[1]) == {fastio.ipv4_key("127.0.0.1")}
        assert ports + more[2] == [senders[i].getsockname()[1] for i, _ in sent]
        # send: several batches' worth, in order, to one address
        target = senders[0].getsockname()
        payloads = [bytes([i]) * (i + 1) for i in range(10)]
        batch.send(payloads, fastio.ipv4_key(target[0]), target[1])
        senders[0].settimeout(2)
        assert [senders[0].recv(100) for _ in payloads] == payloads
        with pytest.raises(ValueError, match="exceeds the 64-byte slot"):
            batch.send([b"x" * 65], fastio.ipv4_key(target[0]), target[1])
    finally:
        for s in (receiver, *senders):
            s.close()


@needs_fastio
def test_batch_socket_errors_are_oserrors():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    batch = fastio.BatchSocket(fastio.load(), sock, slot_size=64, batch=2)
    sock.close()                                              # fileno() -1: EBADF
    with pytest.raises(OSError):
        batch.receive()
    with pytest.raises(ValueError, match="batch must be in 1..256"):
        fastio.BatchSocket(fastio.load(), sock, slot_size=64, batch=257)


def test_without_the_helper_the_worker_falls_back_to_socket_calls(monkeypatch):
    monkeypatch.setattr(fastio, "_loaded", {})
    monkeypatch.setenv(fastio.ENVIRONMENT, "0")
    assert fastio.load() is None and "HOSTS_FASTIO=0" in fastio.unavailable_reason()
    monkeypatch.setattr(fastio, "_loaded", {})
    monkeypatch.delenv(fastio.ENVIRONMENT)

    def no_compiler():
        raise RuntimeError("no C compiler found (install gcc, or set CC)")

    monkeypatch.setattr(fastio, "_library_path", no_compiler)
    assert fastio.load() is None and "no C compiler" in fastio.unavailable_reason()
    transport = worker.UdpTransport("127.0.0.1", 0, ("127.0.0.1", 9))
    try:
        assert transport.batch_lib is None
    finally:
        transport.close()


def test_a_fallback_is_announced_once_in_one_line(capsys, monkeypatch):
    """A faster path that cannot be used says so on stderr, once; one turned off does not."""
    from hosts import cli
    monkeypatch.setattr(cli, "_announced", set())
    cli.announce_fallback("the C engine", "BuildError: gcc failed", "the Python engine")
    cli.announce_fallback("the C engine", "BuildError: gcc failed", "the Python engine")
    cli.announce_fallback("batch I/O", "disabled by HOSTS_FASTIO=0", "recvfrom")
    cli.announce_fallback("batch I/O", None, "recvfrom")
    assert capsys.readouterr().err == ("hosts: the C engine is unavailable (BuildError: gcc "
                                       "failed); running the Python engine\n")
