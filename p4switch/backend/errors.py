"""The back ends' refusal: the requested back end cannot run this program here (raised by
p4switch/targets.py when it chooses one, and by a back end that finds out while loading)."""

from ..frontend.errors import CompileError


class BackendError(CompileError):
    """The requested back end cannot run this program here."""
