"""p4switch: our own P4-16 v1model switch in Python (front end, back end, runtime, tools).

The Switch API (docs/design.md): compile_file, load_device_config, Switch, CompileError.
"""

from .frontend.errors import CompileError
from .program import Program, compile_file, compile_source, load_device_config
from .targets import Switch

__all__ = ["CompileError", "Program", "Switch", "compile_file", "compile_source",
           "load_device_config"]
