"""Exceptions raised by the runtime's control-plane API (tables, PRE, externs).

Each class names the P4Runtime status a server should answer with (`grpc_code`), so the
device's P4Runtime server can map them without knowing the runtime's internals.
"""


class SwitchError(Exception):
    """Base of the runtime's control-plane errors."""

    grpc_code = "UNKNOWN"


class AlreadyExists(SwitchError):
    """Inserting an entry (or group/session) whose key is already present."""

    grpc_code = "ALREADY_EXISTS"


class NotFound(SwitchError):
    """Modifying, deleting or reading something that does not exist (including unknown
    table/action/extern names)."""

    grpc_code = "NOT_FOUND"


class InvalidArgument(SwitchError):
    """A malformed request: wrong match kind, value too wide, bad action, missing priority."""

    grpc_code = "INVALID_ARGUMENT"


class OutOfRange(SwitchError):
    """An index outside an indexed extern (register, counter, meter)."""

    grpc_code = "OUT_OF_RANGE"


class ResourceExhausted(SwitchError):
    """A table already holds `size` entries."""

    grpc_code = "RESOURCE_EXHAUSTED"


class PermissionDenied(SwitchError):
    """Changing something the program declared constant (const entries, const default)."""

    grpc_code = "PERMISSION_DENIED"
