"""Every in-network design (contracts/designs/) has its part in every layer, found through
that layer's table by the design's name: its P4 control, dispatched by its UDP port in the
one program; its worker command; its installer; its mode; its SimGrid model (or none, and
a one-line refusal).  And the manager installs a job with the installer of the design it
asks for."""

import dataclasses
import os
import re
from types import SimpleNamespace

import pytest

from contracts import designs
from contracts.designs import INA
from contracts.jobs import MODES as MODE_NAMES, mode_collectives
from controller import AggregationManager
from controller.designs import INSTALLERS, TreeInstaller
from hosts.__main__ import COMMANDS
from jobs.modes import DESIGN_MODES, MODES, check_collective
from simulation.run import MODELS, SIM_MODES, SimulationError, design_model
from topologies.spec import parse_topology

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DESIGNS = list(designs.REGISTRY.values())


def read(path: str) -> str:
    with open(os.path.join(REPO, path)) as handle:
        return handle.read()


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: d.name)
def test_the_program_hands_the_designs_port_to_its_control(design):
    """main.p4 includes the design's control file and applies an instance of its control
    to the UDP packets whose destination port is a constant of headers.p4 equal to
    design.udp_port; the parser takes that port too."""
    controls = re.findall(r"^control (\w+)\(", read(design.control), re.M)
    main = read("p4src/main.p4")
    assert f'#include "{os.path.relpath(design.control, "p4src")}"' in main
    (instance,) = [m.group(1) for control in controls
                   for m in [re.search(rf"\b{control}\(\) (\w+);", main)] if m]
    port = re.search(rf"hdr\.udp\.dstPort == (\w+)\) {{\s*{instance}\.apply", main).group(1)
    value = re.search(rf"const bit<16> {port}\s*=\s*(\d+);", read("p4src/headers.p4"))
    assert int(value.group(1)) == design.udp_port
    assert re.search(rf"^\s*{port}: parse_\w+;", read("p4src/parser.p4"), re.M)


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: d.name)
def test_every_layer_finds_the_designs_part_by_its_name(design):
    assert design.worker_command in COMMANDS                        # hosts
    installer = INSTALLERS[design.name]                             # controller
    assert all(callable(getattr(installer, verb))
               for verb in ("plan", "writes", "resets", "release", "jobs"))
    mode = MODES[design.name]                                       # jobs
    assert (type(mode), mode.design, mode.name) == (DESIGN_MODES[design.name], design,
                                                    design.name)
    assert design.name in MODE_NAMES and mode_collectives(design.name) == design.collectives
    assert (design.name in MODELS) == design.simulated == (design.name in SIM_MODES)


def test_ours_is_the_tree_design_in_every_layer():
    assert designs.NAMES[0] == "ina" and designs.get("ina") is INA
    assert INSTALLERS["ina"] is TreeInstaller and design_model("ina") is MODELS["ina"]
    assert design_model("ring") is None                  # host algorithms: no design
    with pytest.raises(ValueError,
                       match="unknown design 'sharp' \\(choose from ina, switchml, atp\\)"):
        designs.get("sharp")


def test_a_design_without_a_model_is_refused_in_one_line(monkeypatch):
    unsimulated = dataclasses.replace(INA, name="rack", simulated=False)
    monkeypatch.setitem(designs.REGISTRY, "rack", unsimulated)
    with pytest.raises(SimulationError, match="^rack has no SimGrid model: run it on the "
                                              r"emulated fabric \(experiments compare\)$"):
        design_model("rack")


def test_a_single_rack_design_refuses_a_tree_of_switches():
    rack = dataclasses.replace(INA, name="rack", multi_switch=False,
                               collectives=("allreduce",))
    assert rack.refusal("allreduce", 1) is None
    assert rack.refusal("allreduce", 3) == ("rack aggregates in one switch (a single rack); "
                                            "this topology has 3")
    assert rack.refusal("broadcast", 1) == ("rack does not compute broadcast in the switches "
                                            "(it runs allreduce)")
    mode = SimpleNamespace(name="ina", design=rack)       # as jobs.modes.DesignMode
    assert check_collective(mode, "allreduce", 3) == rack.refusal("allreduce", 3)
    assert check_collective(MODES["ina"], "allreduce", 3) is None


class RecordingConnection:
    """Keeps what would be written on one switch."""

    def __init__(self):
        self.entries, self.groups = [], []

    def insert_entries(self, entries):
        self.entries += entries

    def delete_entries(self, entries):
        for entry in entries:
            self.entries.remove(entry)

    def insert_multicast_group(self, group):
        self.groups.append(group)

    def delete_multicast_group(self, group):
        self.groups.remove(group)


class OneEntryInstaller:
    """A design whose plan is its hosts and whose switch state is one entry per job."""

    def __init__(self, spec, slots_per_switch):
        self.planned = {}

    def plan(self, job_id, member_hosts, window):
        self.planned[job_id] = tuple(member_hosts)
        return self.planned[job_id]

    def writes(self, plan, spec):
        return [dataclasses.make_dataclass("Entry", ["switch", "table"])("s1", "one")], []

    def resets(self, plan):
        return []

    def release(self, job_id):
        del self.planned[job_id]

    def jobs(self):
        return dict(self.planned)


def test_the_manager_installs_with_the_installer_of_the_jobs_design(monkeypatch):
    monkeypatch.setitem(INSTALLERS, "rack", OneEntryInstaller)
    spec = parse_topology("star:3")
    connection = RecordingConnection()
    manager = AggregationManager(spec, {"s1": connection})
    ours = manager.start_job(1, ["h1", "h2"], 4)                   # the default: ina
    assert len(connection.entries) > 1 and connection.groups
    written = len(connection.entries)
    assert manager.start_job(2, ["h3"], 4, design="rack") == ("h3",)
    assert len(connection.entries) == written + 1
    assert manager.jobs() == {1: ours, 2: ("h3",)}
    with pytest.raises(Exception, match="job 2 is already running"):
        manager.start_job(2, ["h1"], 4)                # a job id is one job, of one design
    manager.stop_job(2)
    assert len(connection.entries) == written and manager.installers["rack"].planned == {}
    manager.stop_job(1)
    assert connection.entries == [] and connection.groups == [] and manager.jobs() == {}
