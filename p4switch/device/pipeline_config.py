"""SetForwardingPipelineConfig / GetForwardingPipelineConfig bookkeeping.

p4_device_config is what `p4switch compile -o` writes (Program.device_config). VERIFY checks a
config; VERIFY_AND_SAVE keeps it for a later COMMIT; VERIFY_AND_COMMIT and COMMIT install a
fresh pipeline; RECONCILE_AND_COMMIT keeps the forwarding state when the program is the same
one that runs, and is refused for a different program (this switch cannot carry state across
programs).
"""
import threading
from typing import NamedTuple

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .errors import P4RuntimeError, invalid, unimplemented

Request = p4runtime_pb2.SetForwardingPipelineConfigRequest
Response = p4runtime_pb2.GetForwardingPipelineConfigRequest


# The last device config loaded and its Program.  A Program holds no forwarding state (each
# Switch made from it has its own), so the switches of one process (device/group.py) that are
# given the same config share one Program instead of loading it again (~15 MB each).
_last_loaded: tuple = (None, None)
_last_loaded_lock = threading.Lock()


def load_program(config: p4runtime_pb2.ForwardingPipelineConfig):
    """The Program in a config, after checking its P4Info agrees with the program's own."""
    global _last_loaded
    from p4switch import load_device_config
    if not config.p4_device_config:
        raise invalid("the config has no p4_device_config")
    if not config.HasField("p4info"):
        raise invalid("the config has no p4info")
    with _last_loaded_lock:
        data, program = _last_loaded
        if data != config.p4_device_config:
            try:
                program = load_device_config(config.p4_device_config)
            except Exception as e:  # any failure to decode is the client's bad input
                raise invalid(f"p4_device_config is not a p4switch device config: {e}") \
                    from None
            _last_loaded = (config.p4_device_config, program)
    check_p4info_matches(config.p4info, program.p4info)
    return program


def _named_objects(p4info: p4info_pb2.P4Info) -> dict:
    """{id: name} over every object with a preamble."""
    objects = {}
    for field in p4info.DESCRIPTOR.fields:
        if field.label != field.LABEL_REPEATED or field.message_type is None:
            continue
        if "preamble" not in field.message_type.fields_by_name:
            continue
        for item in getattr(p4info, field.name):
            objects[item.preamble.id] = item.preamble.name
    return objects


def check_p4info_matches(given: p4info_pb2.P4Info, compiled: p4info_pb2.P4Info) -> None:
    """Every object the client's P4Info names must be in the program, with the same id."""
    compiled_objects = _named_objects(compiled)
    for object_id, name in _named_objects(given).items():
        if compiled_objects.get(object_id) != name:
            raise invalid(f"the P4Info does not match the device config: {name} "
                          f"(id {object_id}) is not in the program")


class Commit(NamedTuple):
    """A verified config to make the running one; keep_state: the same program, state kept."""
    config: p4runtime_pb2.ForwardingPipelineConfig
    program: object
    keep_state: bool


def _copy(config: p4runtime_pb2.ForwardingPipelineConfig):
    """A copy the request's later fate cannot change."""
    copy = p4runtime_pb2.ForwardingPipelineConfig()
    copy.CopyFrom(config)
    return copy


class PipelineConfigs:
    """The running and the saved config. Not thread-safe: the caller serialises calls."""

    def __init__(self):
        self.running: p4runtime_pb2.ForwardingPipelineConfig | None = None
        self._saved: Commit | None = None   # from VERIFY_AND_SAVE, for COMMIT

    def apply(self, request) -> Commit | None:
        """Check a SetForwardingPipelineConfig and say what to commit (None: nothing). The
        running config changes only when the caller reports the commit done (`committed`)."""
        action = request.action
        if action == Request.COMMIT:
            if self._saved is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                     "COMMIT without a config saved by VERIFY_AND_SAVE")
            return self._saved
        if action not in (Request.VERIFY, Request.VERIFY_AND_SAVE, Request.VERIFY_AND_COMMIT,
                          Request.RECONCILE_AND_COMMIT):
            raise invalid(f"unsupported SetForwardingPipelineConfig action "
                          f"{Request.Action.Name(action)}")
        program = load_program(request.config)
        if action == Request.VERIFY:
            return None
        if action == Request.VERIFY_AND_SAVE:
            self._saved = Commit(_copy(request.config), program, keep_state=False)
            return None
        if action == Request.RECONCILE_AND_COMMIT and self.running is not None:
            if request.config.p4_device_config != self.running.p4_device_config:
                raise unimplemented("RECONCILE_AND_COMMIT with a different program: this "
                                    "switch cannot carry forwarding state across programs")
            return Commit(_copy(request.config), program, keep_state=True)
        return Commit(_copy(request.config), program, keep_state=False)

    def committed(self, commit: Commit) -> None:
        """The commit took effect: its config is the running one (a saved one is used up)."""
        self.running = commit.config
        if commit is self._saved:
            self._saved = None

    def get(self, response_type: int) -> p4runtime_pb2.ForwardingPipelineConfig:
        """The running config, trimmed to what `response_type` asks for."""
        if self.running is None:
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                 "no forwarding pipeline config has been set")
        config = p4runtime_pb2.ForwardingPipelineConfig()
        if self.running.HasField("cookie"):
            config.cookie.CopyFrom(self.running.cookie)
        if response_type in (Response.ALL, Response.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(self.running.p4info)
        if response_type in (Response.ALL, Response.DEVICE_CONFIG_AND_COOKIE):
            config.p4_device_config = self.running.p4_device_config
        if response_type not in Response.ResponseType.values():
            raise invalid(f"unknown response type {response_type}")
        return config
