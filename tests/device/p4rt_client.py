"""A small P4Runtime test client over the raw stubs: a StreamChannel with arbitration and
queues for what the switch sends, plus Write/Read/pipeline helpers that name things by their
P4Info names."""
import queue
import threading

import grpc
from google.protobuf import text_format
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


def load_p4info(path: str) -> p4info_pb2.P4Info:
    p4info = p4info_pb2.P4Info()
    with open(path) as f:
        text_format.Merge(f.read(), p4info)
    return p4info


def write_errors(error: grpc.RpcError) -> list[tuple[int, str]]:
    """(canonical code, message) per update from a failed Write's status details."""
    for key, value in error.trailing_metadata():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            result = []
            for detail in status.details:
                p4_error = p4runtime_pb2.Error()
                assert detail.Unpack(p4_error)
                result.append((p4_error.canonical_code, p4_error.message))
            return result
    raise AssertionError("Write error without grpc-status-details-bin")


class Client:
    """One controller connection to the switch."""

    def __init__(self, address: str, device_id: int, election_id: int, p4info=None):
        self.device_id, self.election_id = device_id, election_id
        self.p4info = p4info
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._outbox = queue.Queue()
        self.inbox = {"arbitration": queue.Queue(), "packet": queue.Queue(),
                      "digest": queue.Queue(), "error": queue.Queue()}
        self.stream = self.stub.StreamChannel(iter(self._outbox.get, None))
        self.stream_status = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        try:
            for response in self.stream:
                self.inbox.setdefault(response.WhichOneof("update"), queue.Queue()).put(response)
            self.stream_status = grpc.StatusCode.OK
        except grpc.RpcError as e:
            self.stream_status = e.code()

    def arbitrate(self, election_id: int | None = None) -> p4runtime_pb2.MasterArbitrationUpdate:
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        election_id = self.election_id if election_id is None else election_id
        request.arbitration.election_id.high = election_id >> 64
        request.arbitration.election_id.low = election_id & ((1 << 64) - 1)
        self._outbox.put(request)
        return self.next("arbitration").arbitration

    def next(self, kind: str, timeout: float = 3.0):
        return self.inbox[kind].get(timeout=timeout)

    def send_stream(self, request: p4runtime_pb2.StreamMessageRequest) -> None:
        self._outbox.put(request)

    def close(self) -> None:
        self._outbox.put(None)
        self._reader.join(timeout=5)
        self.channel.close()

    def _election(self, message) -> None:
        message.election_id.high = self.election_id >> 64
        message.election_id.low = self.election_id & ((1 << 64) - 1)

    def set_pipeline(self, p4info, device_config: bytes, action=None, cookie=None):
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        self._election(request)
        request.action = (action if action is not None else
                          p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        if cookie is not None:
            request.config.cookie.cookie = cookie
        self.p4info = p4info
        return self.stub.SetForwardingPipelineConfig(request)

    def write(self, *updates: p4runtime_pb2.Update, atomicity=None):
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id, updates=updates)
        if atomicity is not None:
            request.atomicity = atomicity
        self._election(request)
        return self.stub.Write(request)

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=entities)
        return [e for response in self.stub.Read(request) for e in response.entities]

    # ---- P4Info look-ups --------------------------------------------------------------------

    def _find(self, kind: str, name: str):
        for item in getattr(self.p4info, kind):
            if item.preamble.name == name or item.preamble.name.endswith("." + name):
                return item
        raise KeyError(f"no {kind} {name}")

    def table_id(self, name: str) -> int:
        return self._find("tables", name).preamble.id

    def id_of(self, kind: str, name: str) -> int:
        return self._find(kind, name).preamble.id

    def table_entry(self, table: str, match: dict, action: str | None = None,
                    params: dict | None = None, priority: int = 0) -> p4runtime_pb2.TableEntry:
        """match: {field name: bytes (exact) | (bytes, plen) (lpm) | ('ternary', v, m) |
        ('range', lo, hi)}; params: {name: bytes}."""
        info = self._find("tables", table)
        fields = {f.name: f for f in info.match_fields}
        entry = p4runtime_pb2.TableEntry(table_id=info.preamble.id, priority=priority)
        for name, value in match.items():
            fm = entry.match.add(field_id=fields[name].id)
            if isinstance(value, bytes):
                fm.exact.value = value
            elif value[0] == "ternary":
                fm.ternary.value, fm.ternary.mask = value[1], value[2]
            elif value[0] == "range":
                fm.range.low, fm.range.high = value[1], value[2]
            else:
                fm.lpm.value, fm.lpm.prefix_len = value
        if action is not None:
            action_info = self._find("actions", action)
            entry.action.action.action_id = action_info.preamble.id
            param_ids = {p.name: p.id for p in action_info.params}
            for name, value in (params or {}).items():
                entry.action.action.params.add(param_id=param_ids[name], value=value)
        return entry


def update(kind: int, **entity) -> p4runtime_pb2.Update:
    """Update of `kind` (INSERT/MODIFY/DELETE) for one entity given as field=message."""
    message = p4runtime_pb2.Update(type=kind)
    (field, value), = entity.items()
    getattr(message.entity, field).CopyFrom(value)
    return message


INSERT, MODIFY, DELETE = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                          p4runtime_pb2.Update.DELETE)
