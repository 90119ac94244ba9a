"""SetForwardingPipelineConfig actions and GetForwardingPipelineConfig response types
(p4switch.device.pipeline_config) with small compiled programs."""
import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch import compile_source
from p4switch.device.errors import P4RuntimeError
from p4switch.device.pipeline_config import PipelineConfigs

Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest

TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in p, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table TABLE { key = { hdr.h.f: exact; } actions = { fwd; NoAction; } }
    apply { TABLE.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out p, in headers_t hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def programs():
    return [compile_source(TEMPLATE.replace("TABLE", name), name) for name in ("t1", "t2")]


def request(action, program=None, p4info=None, cookie=None):
    message = Set(device_id=0, action=action)
    if program is not None:
        message.config.p4info.CopyFrom(p4info if p4info is not None else program.p4info)
        message.config.p4_device_config = program.device_config
    if cookie is not None:
        message.config.cookie.cookie = cookie
    return message


def refused(configs, message) -> grpc.StatusCode:
    with pytest.raises(P4RuntimeError) as e:
        configs.apply(message)
    return e.value.code


def commit(configs, message):
    """apply + committed, as the service does once the switch is built."""
    result = configs.apply(message)
    if result is not None:
        configs.committed(result)
    return result


def test_verify_checks_without_committing(programs):
    configs = PipelineConfigs()
    assert configs.apply(request(Set.VERIFY, programs[0])) is None
    assert refused_get(configs) == grpc.StatusCode.FAILED_PRECONDITION


def refused_get(configs) -> grpc.StatusCode:
    with pytest.raises(P4RuntimeError) as e:
        configs.get(Get.ALL)
    return e.value.code


def test_commit_needs_a_saved_config(programs):
    configs = PipelineConfigs()
    assert refused(configs, request(Set.COMMIT)) == grpc.StatusCode.FAILED_PRECONDITION
    assert configs.apply(request(Set.VERIFY_AND_SAVE, programs[1], cookie=5)) is None
    config, program, keep_state = commit(configs, request(Set.COMMIT))
    assert (program.name, keep_state, config.cookie.cookie) == ("t2", False, 5)
    assert configs.get(Get.ALL).cookie.cookie == 5
    assert refused(configs, request(Set.COMMIT)) == grpc.StatusCode.FAILED_PRECONDITION


def test_nothing_changes_until_the_commit_is_done(programs):
    configs = PipelineConfigs()
    commit(configs, request(Set.VERIFY_AND_COMMIT, programs[0]))
    configs.apply(request(Set.VERIFY_AND_COMMIT, programs[1]))     # switch not built (yet)
    assert configs.get(Get.ALL).p4info == programs[0].p4info


def test_reconcile_keeps_state_only_for_the_same_program(programs):
    configs = PipelineConfigs()
    commit(configs, request(Set.VERIFY_AND_COMMIT, programs[0]))
    _, _, keep_state = commit(configs, request(Set.RECONCILE_AND_COMMIT, programs[0]))
    assert keep_state is True
    assert refused(configs, request(Set.RECONCILE_AND_COMMIT, programs[1])) == \
        grpc.StatusCode.UNIMPLEMENTED
    assert configs.get(Get.ALL).p4_device_config == programs[0].device_config


def test_reconcile_without_a_running_program_commits(programs):
    _, program, keep_state = PipelineConfigs().apply(
        request(Set.RECONCILE_AND_COMMIT, programs[1]))
    assert (program.name, keep_state) == ("t2", False)


@pytest.mark.parametrize("make", [
    lambda programs: request(Set.UNSPECIFIED, programs[0]),
    lambda programs: request(Set.VERIFY_AND_COMMIT),                          # no config
    lambda programs: request(Set.VERIFY_AND_COMMIT, programs[0], p4info=programs[1].p4info),
])
def test_bad_requests_are_invalid_and_change_nothing(programs, make):
    configs = PipelineConfigs()
    commit(configs, request(Set.VERIFY_AND_COMMIT, programs[0], cookie=1))
    assert refused(configs, make(programs)) == grpc.StatusCode.INVALID_ARGUMENT
    assert configs.get(Get.ALL).cookie.cookie == 1


def test_garbage_device_config_is_invalid(programs):
    message = request(Set.VERIFY_AND_COMMIT, programs[0])
    message.config.p4_device_config = b"\x00garbage"
    assert refused(PipelineConfigs(), message) == grpc.StatusCode.INVALID_ARGUMENT


def test_get_response_types(programs):
    configs = PipelineConfigs()
    commit(configs, request(Set.VERIFY_AND_COMMIT, programs[0], cookie=7))
    full = configs.get(Get.ALL)
    assert (full.p4info, full.p4_device_config, full.cookie.cookie) == (
        programs[0].p4info, programs[0].device_config, 7)
    cookie = configs.get(Get.COOKIE_ONLY)
    assert not cookie.HasField("p4info") and not cookie.p4_device_config
    assert cookie.cookie.cookie == 7
    p4info = configs.get(Get.P4INFO_AND_COOKIE)
    assert p4info.p4info == programs[0].p4info and not p4info.p4_device_config
    device = configs.get(Get.DEVICE_CONFIG_AND_COOKIE)
    assert device.p4_device_config == programs[0].device_config
    assert not device.HasField("p4info")
