"""P4Runtime errors: one exception type carrying a gRPC status code, and the Write error report.

A Write that fails answers like PI does: gRPC status UNKNOWN, with trailing metadata
`grpc-status-details-bin` holding a google.rpc.Status whose details are one p4.v1.Error per
update (OK for the updates that succeeded).
"""
import grpc
from google.protobuf import any_pb2
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2

STATUS_DETAILS_KEY = "grpc-status-details-bin"


class P4RuntimeError(Exception):
    """A request the server refuses; `code` is the grpc.StatusCode to answer with."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.NOT_FOUND, message)


def out_of_range(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.OUT_OF_RANGE, message)


def unimplemented(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, message)


def code_number(code: grpc.StatusCode) -> int:
    """The google.rpc.Code number of a grpc.StatusCode."""
    return code.value[0]


def write_error_status(results: list) -> status_pb2.Status:
    """google.rpc.Status for a Write batch; `results` holds None (success) or a P4RuntimeError
    per update, in update order."""
    failed = [r for r in results if r is not None]
    status = status_pb2.Status(
        code=code_number(grpc.StatusCode.UNKNOWN),
        message=f"{len(failed)} of {len(results)} updates failed: "
        + "; ".join(e.message for e in failed[:3]))
    for result in results:
        error = p4runtime_pb2.Error(canonical_code=code_number(grpc.StatusCode.OK))
        if result is not None:
            error = p4runtime_pb2.Error(canonical_code=code_number(result.code),
                                        message=result.message)
        detail = any_pb2.Any()
        detail.Pack(error)
        status.details.append(detail)
    return status


def abort_with_write_errors(context: grpc.ServicerContext, results: list) -> None:
    """End the Write RPC with the per-update error report (raises, as context.abort does)."""
    status = write_error_status(results)
    context.set_trailing_metadata(((STATUS_DETAILS_KEY, status.SerializeToString()),))
    context.abort(grpc.StatusCode.UNKNOWN, status.message)


def code_from_name(name: str) -> grpc.StatusCode:
    """grpc.StatusCode from its name ('NOT_FOUND'); UNKNOWN for names gRPC does not have."""
    return getattr(grpc.StatusCode, name, grpc.StatusCode.UNKNOWN)
