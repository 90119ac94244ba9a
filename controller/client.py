"""P4Runtime client for one switch: arbitration, pipeline, table/multicast writes, reads.

One `SwitchConnection` per switch; any number of them live in one process (each has its own
gRPC channel and stream).  The stream stays open for the connection's lifetime because the
primary (master) role lasts as long as it does.

Registers (read_register, read_register_cells, write_register, reset_register) go over
P4Runtime to p4switch; a connection given a `thrift_port` (a bmv2 switch, whose P4Runtime
server does not implement registers) sends them to bmv2's Thrift API instead
(controller/bmv2_registers.py).  Callers see one interface either way.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

import grpc
from grpc import _common as grpc_common
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .bmv2_registers import RegisterAccessError, ThriftRegisters
from .entries import MulticastGroup
from .p4info import P4InfoHelper, decode_value, encode_value

ARBITRATION_TIMEOUT_S = 10.0

# grpc's blocking waits (a stream's next response, here one drain thread per switch) sleep
# in slices of MAXIMUM_WAIT_TIMEOUT (0.1 s) and wake to re-check even when nothing came.  At
# fattree:16 the 320 drain threads woke 3,200 times a second, each taking the GIL from the
# threads installing routes: 0.4 s of CPU per thread, and the controller's CPU for the
# routes doubled.  A wait still ends at once when notified and keeps its timeout; only the
# idle re-checks are rarer.  (p4switch's server does the same for its request streams.)
GRPC_IDLE_RECHECK_S = 3.0
grpc_common.MAXIMUM_WAIT_TIMEOUT = GRPC_IDLE_RECHECK_S


class SwitchError(RuntimeError):
    """The switch refused us or did not answer (one-line message naming the switch)."""


@dataclass(frozen=True)
class Pipeline:
    """What SetForwardingPipelineConfig carries: the P4Info and the target's device config."""

    p4info: p4info_pb2.P4Info
    device_config: bytes

    @classmethod
    def from_files(cls, p4info_path: str, device_config_path: str) -> "Pipeline":
        """P4Info as protobuf text (.txt, .txtpb), JSON (.json) or binary (anything else);
        the device config as raw bytes (p4switch's `compile -o` output, or bmv2's JSON)."""
        p4info = p4info_pb2.P4Info()
        with open(p4info_path, "rb") as f:
            data = f.read()
        if p4info_path.endswith((".txt", ".txtpb")):
            text_format.Parse(data.decode(), p4info)
        elif p4info_path.endswith(".json"):
            json_format.Parse(data.decode(), p4info)
        else:
            p4info.ParseFromString(data)
        with open(device_config_path, "rb") as f:
            return cls(p4info, f.read())


class SwitchConnection:
    """A primary P4Runtime session with the switch at `address` ("127.0.0.1:9559")."""

    def __init__(self, name: str, address: str, device_id: int, election_id: int = 1,
                 thrift_port: int | None = None):
        """thrift_port: bmv2's Thrift API of the same switch, where its registers are read
        and written (None: over P4Runtime)."""
        self.name = name
        self.address = address
        self.device_id = device_id
        self.thrift_port = thrift_port
        self.registers = (ThriftRegisters(name, thrift_port) if thrift_port is not None
                          else None)
        self.election_id = p4runtime_pb2.Uint128(high=election_id >> 64,
                                                 low=election_id & ((1 << 64) - 1))
        self.helper: P4InfoHelper | None = None
        self._channel = grpc.insecure_channel(address)
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self._stream = None

    # ------------------------------------------------------------ session

    def connect(self, timeout: float = ARBITRATION_TIMEOUT_S,
                primary: bool = True) -> "SwitchConnection":
        """Open the stream and become primary; raises if another client is primary.
        With primary=False only reads are possible, next to another controller."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise SwitchError(f"switch {self.name}: no P4Runtime server at "
                              f"{self.address}") from None
        if not primary:
            return self
        self._stream = self._stub.StreamChannel(iter(self._requests.get, None))
        threading.Thread(target=self._drain, daemon=True,
                         name=f"p4rt-stream-{self.name}").start()
        self._requests.put(p4runtime_pb2.StreamMessageRequest(
            arbitration=p4runtime_pb2.MasterArbitrationUpdate(
                device_id=self.device_id, election_id=self.election_id)))
        while True:
            try:
                response = self._responses.get(timeout=timeout)
            except queue.Empty:
                raise SwitchError(f"switch {self.name}: no arbitration answer") from None
            if isinstance(response, grpc.RpcError):
                raise SwitchError(f"switch {self.name}: stream failed: "
                                  f"{response.details()}") from None
            if response.HasField("arbitration"):
                status = response.arbitration.status
                if status.code != grpc.StatusCode.OK.value[0]:
                    raise SwitchError(f"switch {self.name}: not primary: {status.message}")
                return self

    def _drain(self) -> None:
        try:
            for response in self._stream:
                self._responses.put(response)
        except grpc.RpcError as error:
            self._responses.put(error)

    def close(self) -> None:
        if self._stream is not None:
            self._requests.put(None)
        self._channel.close()
        if self.registers is not None:
            self.registers.close()

    # ------------------------------------------------------------ pipeline

    def set_pipeline(self, pipeline: Pipeline) -> None:
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=self.election_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        request.config.p4info.CopyFrom(pipeline.p4info)
        request.config.p4_device_config = pipeline.device_config
        self._call("SetForwardingPipelineConfig", request)
        self.helper = P4InfoHelper(pipeline.p4info)

    def fetch_p4info(self) -> None:
        """Adopt the P4Info of the pipeline the switch already runs."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        response = self._call("GetForwardingPipelineConfig", request)
        self.helper = P4InfoHelper(response.config.p4info)

    # ------------------------------------------------------------ writes

    def insert_entries(self, entries: list) -> None:
        self._write_table_entries(p4runtime_pb2.Update.INSERT, entries)

    def modify_entries(self, entries: list) -> None:
        """Change the action (parameters) of entries that are installed."""
        self._write_table_entries(p4runtime_pb2.Update.MODIFY, entries)

    def delete_entries(self, entries: list) -> None:
        self._write_table_entries(p4runtime_pb2.Update.DELETE, entries)

    def insert_multicast_group(self, group: MulticastGroup) -> None:
        self._write_multicast_group(p4runtime_pb2.Update.INSERT, group)

    def delete_multicast_group(self, group: MulticastGroup) -> None:
        self._write_multicast_group(p4runtime_pb2.Update.DELETE, group)

    def _write_table_entries(self, kind, entries: list) -> None:
        # Each update is built in place in the request (P4InfoHelper says why).
        helper, request = self._helper(), self._request()
        for entry in entries:
            update = request.updates.add(type=kind)
            helper.fill_table_entry(update.entity.table_entry, entry,
                                    with_action=kind != p4runtime_pb2.Update.DELETE)
        self._write(request)

    def _write_multicast_group(self, kind, group: MulticastGroup) -> None:
        request = self._request()
        update = request.updates.add(type=kind)
        entry = update.entity.packet_replication_engine_entry.multicast_group_entry
        entry.multicast_group_id = group.group_id
        if kind != p4runtime_pb2.Update.DELETE:
            for port, instance in group.replicas:
                entry.replicas.add(egress_port=port, instance=instance)
        self._write(request)

    def _request(self) -> p4runtime_pb2.WriteRequest:
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        request.election_id.CopyFrom(self.election_id)
        return request

    def _write(self, request: p4runtime_pb2.WriteRequest) -> None:
        if request.updates:
            self._call("Write", request)

    # ------------------------------------------------------------ reads

    def read_counter(self, name: str) -> dict:
        """{index: (packets, bytes)} of every cell of an indirect counter."""
        counter = self._helper().counter(name)
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.add().counter_entry.counter_id = counter.preamble.id
        cells = {}
        for entity in self._read(request):
            entry = entity.counter_entry
            cells[entry.index.index] = (entry.data.packet_count, entry.data.byte_count)
        return cells

    # ------------------------------------------------------------ registers

    def read_register(self, name: str, index: int) -> int:
        """One cell of a register (name: its P4Info name or a unique suffix)."""
        register = self._helper().register(name)
        if self.registers is not None:
            return self._thrift(self.registers.read, register, index)
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        entry = request.entities.add().register_entry
        entry.register_id = register.preamble.id
        entry.index.index = index
        for entity in self._read(request):
            data = entity.register_entry.data
            return decode_value(data.bitstring) if data.HasField("bitstring") else 0
        raise SwitchError(f"switch {self.name}: register {name}[{index}] not returned")

    def read_register_cells(self, name: str) -> dict:
        """{index: value} of every cell of a register, in one Read (or one Thrift call)."""
        register = self._helper().register(name)
        if self.registers is not None:
            return dict(enumerate(self._thrift(self.registers.read_all, register)))
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.add().register_entry.register_id = register.preamble.id
        cells = {}
        for entity in self._read(request):
            entry = entity.register_entry
            data = entry.data
            cells[entry.index.index] = decode_value(data.bitstring) \
                if data.HasField("bitstring") else 0
        return cells

    def write_register(self, name: str, index: int | None, value: int) -> None:
        """Set one cell (index None: every cell) of a register to `value`."""
        register = self._helper().register(name)
        if self.registers is not None:
            if index is None:
                self._thrift(self.registers.write_range, register, 0, register.size, value)
            else:
                self._thrift(self.registers.write, register, index, value)
            return
        request = self._request()
        entry = request.updates.add(type=p4runtime_pb2.Update.MODIFY).entity.register_entry
        entry.register_id = register.preamble.id
        if index is not None:
            entry.index.index = index
        entry.data.bitstring = encode_value(value, _width(register))
        self._write(request)

    def reset_register_cells(self, name: str, first: int, end: int) -> None:
        """Cells first .. end - 1 of a register back to 0 (one request)."""
        register = self._helper().register(name)
        if self.registers is not None:
            self._thrift(self.registers.write_range, register, first, end, 0)
            return
        request = self._request()
        zero = encode_value(0, _width(register))
        for index in range(first, end):
            entry = request.updates.add(type=p4runtime_pb2.Update.MODIFY).entity.register_entry
            entry.register_id = register.preamble.id
            entry.index.index = index
            entry.data.bitstring = zero
        self._write(request)

    def reset_register(self, name: str) -> None:
        """Every cell of a register back to 0."""
        register = self._helper().register(name)
        if self.registers is not None:
            self._thrift(self.registers.reset, register)
        else:
            self.write_register(name, None, 0)

    def _thrift(self, operation, register, *args):
        try:
            return operation(register.preamble.name, *args, width=_width(register))
        except (RegisterAccessError, ValueError) as error:
            text = str(error)
            raise SwitchError(text if self.name in text else
                              f"switch {self.name}: {text}") from None

    def read_table(self, table_name: str) -> list:
        """The raw p4runtime TableEntry messages of one table."""
        table = self._helper().table(table_name)
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.add().table_entry.table_id = table.preamble.id
        return [entity.table_entry for entity in self._read(request)]

    def read_default_entry(self, table_name: str):
        """The raw p4runtime TableEntry of a table's default entry."""
        table = self._helper().table(table_name)
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        wanted = request.entities.add().table_entry
        wanted.table_id, wanted.is_default_action = table.preamble.id, True
        (entity,) = self._read(request)
        return entity.table_entry

    def read_multicast_group(self, group_id: int) -> list:
        """[(egress_port, instance)] of a multicast group; [] if the switch has none."""
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        entity = request.entities.add()
        entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = \
            group_id
        try:
            entities = self._read(request)
        except SwitchError as error:
            if "NOT_FOUND" in str(error):
                return []
            raise
        return [(r.egress_port, r.instance) for e in entities
                for r in e.packet_replication_engine_entry.multicast_group_entry.replicas]

    def _read(self, request) -> list:
        try:
            return [entity for response in self._stub.Read(request)
                    for entity in response.entities]
        except grpc.RpcError as error:
            raise SwitchError(f"switch {self.name}: Read failed: "
                              f"{_rpc_message(error)}") from None

    # ------------------------------------------------------------ helpers

    def _helper(self) -> P4InfoHelper:
        if self.helper is None:
            raise SwitchError(f"switch {self.name}: no pipeline set or fetched yet")
        return self.helper

    def _call(self, method: str, request):
        try:
            return getattr(self._stub, method)(request)
        except grpc.RpcError as error:
            raise SwitchError(f"switch {self.name}: {method} failed: "
                              f"{_rpc_message(error)}") from None


def _width(register) -> int:
    return register.type_spec.bitstring.bit.bitwidth


def _rpc_message(error: grpc.RpcError) -> str:
    details = error.details() if hasattr(error, "details") else str(error)
    code = error.code().name if hasattr(error, "code") and error.code() else "UNKNOWN"
    return f"{code}: {details}"

