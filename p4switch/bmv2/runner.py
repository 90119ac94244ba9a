"""An STF file on real bmv2: p4c-bm2-ss compiles the program, a fresh simple_switch runs it,
and the STF loop and comparison shared with our back ends (``stf.StfDriver``) judge it.

``Bmv2StfRunner`` supplies StfDriver's hooks: control commands through ``Bmv2Control``,
packets through ``SimpleSwitch.send`` (each run to completion, like ``Switch.process_packet``),
digests from learning notifications, registers and counters read over Thrift.
``run_stf_file`` is what ``python -m p4switch stf ... --backend bmv2`` calls.
"""

from p4switch import stf
from p4switch.runtime.errors import SwitchError

from .compiler import compile_program
from .control import Bmv2Control, Unsupported
from .digests import LearnDecoder
from .process import SimpleSwitch
from .thrift import error_text


class Bmv2StfRunner(stf.StfDriver):
    """Runs STF commands on one simple_switch (``switch``) for a p4c-compiled program."""

    def __init__(self, switch, compiled, filename="<stf>"):
        self.switch = switch
        self.compiled = compiled
        self.filename = filename
        self.control = Bmv2Control(switch.clients, compiled)
        self.decoder = LearnDecoder(compiled.json, compiled.p4info)
        self.digests = []
        for list_id in self.decoder.list_ids:       # one sample per notification, at once
            switch.clients.standard.bm_learning_set_buffer_size(0, list_id, 1)
            switch.clients.standard.bm_learning_set_timeout(0, list_id, 0)

    def _call(self, cmd, function, *args):
        from thrift.Thrift import TException
        try:
            return function(*args)
        except Unsupported as exc:
            raise Unsupported(f"{self.where(cmd)}: {exc}") from None
        except (SwitchError, ValueError) as exc:
            raise stf.StfError(f"{self.where(cmd)}: {exc}") from None
        except TException as exc:
            raise stf.StfError(f"{self.where(cmd)}: bmv2 refused it: {error_text(exc)}") from None

    def apply_control(self, cmd):
        self._call(cmd, self.control.apply, cmd)

    def send_packet(self, port, data):
        out, learned = self.switch.send(port, data)
        for message in learned:
            list_id, buffer_id, samples = self.decoder.decode(message)
            self.digests.extend(samples)
            self.switch.clients.standard.bm_learning_ack_buffer(0, list_id, buffer_id)
        return out

    def register_value(self, cmd):
        return self._call(cmd, self.control.register_value, cmd.register, cmd.index)

    def counter_value(self, cmd):
        return self._call(cmd, self.control.counter_value, cmd.counter, cmd.index)


def needs_trace(compiled):
    """Digests are counted from simple_switch's trace-level log lines."""
    return bool(compiled.json.get("learn_lists"))


def run_commands(toolchain, compiled, commands, filename="<stf>"):
    """An StfResult: ``commands`` on a fresh simple_switch running ``compiled``."""
    with SimpleSwitch(toolchain, compiled.json_path, trace=needs_trace(compiled)) as switch:
        return Bmv2StfRunner(switch, compiled, filename).run(commands)


def run_stf_file(toolchain, program_path, commands, filename, include_dirs=(), defines=None):
    """Compile ``program_path`` with p4c-bm2-ss and run the parsed STF ``commands``."""
    compiled = compile_program(toolchain, program_path, include_dirs, defines)
    try:
        return run_commands(toolchain, compiled, commands, filename)
    finally:
        compiled.cleanup()
