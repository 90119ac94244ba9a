"""P4Runtime 1.x gRPC service of the device (p4.v1.P4Runtime), in front of a Datapath.

Handles client arbitration, the forwarding pipeline config, Write/Read of entities (via
`entities.EntityStore`), packet I/O and digests on the StreamChannel, and Capabilities.
Errors follow the spec and PI: a failed Write answers UNKNOWN with one p4.v1.Error per update;
a request from a client that is not primary gets PERMISSION_DENIED; anything needing a pipeline
before one is set gets FAILED_PRECONDITION.
"""
import logging
import queue
import threading
from concurrent import futures

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from . import packet_io
from .arbitration import Arbitration, election_id_value, role_key
from .entities import EntityStore
from .errors import P4RuntimeError, abort_with_write_errors, code_number, invalid
from .p4info_index import P4InfoIndex
from .pipeline_config import Commit, PipelineConfigs

API_VERSION = "1.4.1"
_log = logging.getLogger("p4switch.device.p4runtime")
_END_OF_STREAM = object()
_ENTITIES_PER_RESPONSE = 2000
_MAX_MESSAGE_BYTES = 64 * 1024 * 1024   # device configs and big batches


class _Stream:
    """One open StreamChannel: its outbound queue."""

    def __init__(self):
        self.outbox: queue.Queue = queue.Queue()
        self.arbitrated = False

    def send(self, response: p4runtime_pb2.StreamMessageResponse) -> None:
        self.outbox.put(response)

    def close(self, error: P4RuntimeError | None = None) -> None:
        self.outbox.put(error if error is not None else _END_OF_STREAM)


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The P4Runtime server of one device."""

    def __init__(self, device_id: int, datapath):
        self.device_id = device_id
        self.datapath = datapath
        self.arbitration = Arbitration(device_id)
        self.configs = PipelineConfigs()
        self.store: EntityStore | None = None
        self._streams: dict[_Stream, None] = {}
        self._streams_lock = threading.Lock()
        self._config_lock = threading.Lock()
        datapath.on_packet_in = self._send_packet_in
        datapath.on_digest = self._send_digest

    # ---- helpers -------------------------------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                 f"device id {device_id} is not this switch "
                                 f"(device id {self.device_id})")

    def _require_pipeline(self) -> EntityStore:
        store = self.store
        if store is None:
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                 "no forwarding pipeline config has been set")
        return store

    @staticmethod
    def _abort(context, error: P4RuntimeError):
        context.abort(error.code, error.message)

    # ---- Capabilities ----------------------------------------------------------------------

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ---- pipeline config -------------------------------------------------------------------

    def SetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
            role = role_key(name=request.role, role_id=request.role_id)
            self.arbitration.check_primary(role, election_id_value(request),
                                           "SetForwardingPipelineConfig")
            with self._config_lock:
                commit = self.configs.apply(request)
                if commit is not None:
                    self._commit(commit)
        except P4RuntimeError as e:
            self._abort(context, e)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def start_with(self, program) -> None:
        """Run `program` from the start (a program given on the command line), as if a
        client had committed it."""
        config = p4runtime_pb2.ForwardingPipelineConfig(
            p4info=program.p4info, p4_device_config=program.device_config)
        with self._config_lock:
            self._commit(Commit(config, program, keep_state=False))

    def _commit(self, commit: Commit) -> None:
        """Make a verified config the running one (a fresh Switch unless state is kept); if
        the switch cannot be built, everything stays as it was."""
        if not commit.keep_state:
            with self.datapath.lock:   # packets and requests see the new program and store together
                try:
                    self.datapath.install(commit.program)
                except Exception as e:  # noqa: BLE001 - report it, keep the running pipeline
                    _log.exception("building the switch failed")
                    raise P4RuntimeError(grpc.StatusCode.INTERNAL,
                                         f"cannot run this program: {e}") from None
                self.store = EntityStore(P4InfoIndex(commit.config.p4info), self.datapath)
        self.configs.committed(commit)
        _log.info("pipeline committed (%d bytes of device config)",
                  len(commit.config.p4_device_config))

    def GetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
            return p4runtime_pb2.GetForwardingPipelineConfigResponse(
                config=self.configs.get(request.response_type))
        except P4RuntimeError as e:
            self._abort(context, e)

    # ---- Write / Read ----------------------------------------------------------------------

    def Write(self, request, context):
        try:
            self._check_device(request.device_id)
            role = role_key(name=request.role, role_id=request.role_id)
            self.arbitration.check_primary(role, election_id_value(request), "Write")
            store = self._require_pipeline()
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                name = p4runtime_pb2.WriteRequest.Atomicity.Name(request.atomicity)
                raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                                     f"write atomicity {name} is not supported "
                                     "(only CONTINUE_ON_ERROR)")
        except P4RuntimeError as e:
            self._abort(context, e)
        with self.datapath.batch():     # each changed C table loaded once per Write
            results = [store.write(update) for update in request.updates]
        if any(r is not None for r in results):
            abort_with_write_errors(context, results)
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):
        try:
            self._check_device(request.device_id)
            store = self._require_pipeline()
            entities = [e for wanted in request.entities for e in store.read(wanted)]
        except P4RuntimeError as e:
            self._abort(context, e)
        except Exception as e:  # noqa: BLE001 - a bug here must not take the server down
            _log.exception("read failed unexpectedly")
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {e}")
        # Several responses keep each message well under gRPC's default 4 MB client limit.
        for start in range(0, max(len(entities), 1), _ENTITIES_PER_RESPONSE):
            yield p4runtime_pb2.ReadResponse(
                entities=entities[start:start + _ENTITIES_PER_RESPONSE])

    # ---- StreamChannel ---------------------------------------------------------------------

    def StreamChannel(self, request_iterator, context):
        stream = _Stream()
        with self._streams_lock:
            self._streams[stream] = None
        context.add_callback(lambda: self._close_stream(stream))
        reader = threading.Thread(target=self._read_stream, args=(stream, request_iterator),
                                  name="p4rt-stream-reader", daemon=True)
        reader.start()
        while True:
            item = stream.outbox.get()
            if item is _END_OF_STREAM:
                break
            if isinstance(item, P4RuntimeError):
                self._forget_stream(stream)
                context.abort(item.code, item.message)
            yield item
        self._forget_stream(stream)

    def _read_stream(self, stream: _Stream, request_iterator) -> None:
        """Handle the client's stream messages until it half-closes or the call ends."""
        try:
            for request in request_iterator:
                kind = request.WhichOneof("update")
                if kind == "arbitration":
                    self._handle_arbitration(stream, request.arbitration)
                elif kind == "packet":
                    self._handle_packet_out(stream, request.packet)
                elif kind == "digest_ack":
                    store = self.store
                    if store is not None:
                        store.digest_lists.ack(request.digest_ack.digest_id,
                                               request.digest_ack.list_id)
                else:
                    self._stream_error(stream, invalid(f"unsupported stream message {kind}"))
        except P4RuntimeError as e:
            stream.close(e)
            return
        except Exception:  # noqa: BLE001 - the call was cancelled or broke; the callback cleans up
            pass
        stream.close()

    def _handle_arbitration(self, stream: _Stream, update) -> None:
        for target, response in self.arbitration.arbitrate(stream, update):
            target.send(p4runtime_pb2.StreamMessageResponse(arbitration=response))
        stream.arbitrated = True

    def _handle_packet_out(self, stream: _Stream, packet) -> None:
        try:
            if not stream.arbitrated:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                     "PacketOut before arbitration")
            if not self.arbitration.is_stream_primary(stream):
                raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                                     "PacketOut from a client that is not primary")
            store = self._require_pipeline()
            header = store.index.controller_headers.get("packet_out")
            frame = (packet_io.pack_packet_out(header, packet) if header is not None
                     else packet.payload)
            if self.datapath.cpu_port is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                     "PacketOut needs a CPU port (run with --cpu-port N)")
            self.datapath.inject(self.datapath.cpu_port, frame, origin="PacketOut")
        except P4RuntimeError as e:
            self._stream_error(stream, e, packet_out=packet)

    @staticmethod
    def _stream_error(stream: _Stream, error: P4RuntimeError, packet_out=None) -> None:
        response = p4runtime_pb2.StreamMessageResponse()
        response.error.canonical_code = code_number(error.code)
        response.error.message = error.message
        if packet_out is not None:
            response.error.packet_out.packet_out.CopyFrom(packet_out)
        stream.send(response)

    def _close_stream(self, stream: _Stream) -> None:
        self._forget_stream(stream)
        stream.close()

    def _forget_stream(self, stream: _Stream) -> None:
        with self._streams_lock:
            self._streams.pop(stream, None)
        for target, response in self.arbitration.leave(stream):
            target.send(p4runtime_pb2.StreamMessageResponse(arbitration=response))

    def _primary_streams(self) -> list[_Stream]:
        with self._streams_lock:
            streams = list(self._streams)
        return [s for s in streams
                if s.arbitrated and self.arbitration.is_stream_primary(s)]

    # ---- packet-in and digests (called from the packet path, under the datapath lock) -----

    def _send_packet_in(self, frame: bytes) -> None:
        store = self.store
        header = store.index.controller_headers.get("packet_in") if store else None
        try:
            packet = (packet_io.unpack_packet_in(header, frame) if header is not None
                      else p4runtime_pb2.PacketIn(payload=frame))
        except P4RuntimeError as e:
            _log.warning("packet to the CPU port dropped: %s", e.message)
            return
        for stream in self._primary_streams():
            stream.send(p4runtime_pb2.StreamMessageResponse(packet=packet))

    def _send_digest(self, name: str, values: list) -> None:
        store = self.store
        digest = store.index.digest_by_name(name) if store else None
        config = store.digest_config(digest.preamble.id) if digest is not None else None
        if config is None:
            return   # digests are only streamed once a DigestEntry configured them
        digest_list = store.digest_lists.make(digest.preamble.id, values,
                                              config.ack_timeout_ns,
                                              as_tuple=digest.type_spec.HasField("tuple"))
        if digest_list is None:
            return
        for stream in self._primary_streams():
            stream.send(p4runtime_pb2.StreamMessageResponse(digest=digest_list))


def serve(service: P4RuntimeService, address: str, workers: int = 32) -> grpc.Server:
    """Start a gRPC server for `service` on `address` (HOST:PORT). Raises OSError when the
    address cannot be bound. Each open StreamChannel holds one worker thread for its life,
    hence the generous pool."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
        options=[("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
                 ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES)])
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(service, server)
    try:
        port = server.add_insecure_port(address)
    except RuntimeError:
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {address} (address in use or not available)")
    server.start()
    return server
