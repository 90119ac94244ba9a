"""Allreduce modes the compare runner knows: how to prepare a job and each worker's command.

A mode turns one `JobSetup` (job id, member hosts, vector parameters) into worker commands.
`ina` asks the aggregation manager for a reduction tree first and runs `python -m hosts worker`
on every member; `ring` needs nothing from the switches beyond forwarding and runs
`python -m hosts ring`.  Adding a mode means adding a class to MODES.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from topologies.switches import python_executable

RING_FIRST_PORT = 21000      # ring listeners: RING_FIRST_PORT + job (workers use 20000 + job)


@dataclass(frozen=True)
class JobSetup:
    job: int
    hosts: tuple              # member host names, rank order
    host_ips: tuple           # their addresses, same order
    elements: int
    dtype: str
    seed: int
    window: int
    k: int
    out_dir: str              # absolute; reports and logs go below it


def report_path(setup: JobSetup, mode: str, rank: int) -> str:
    return os.path.join(setup.out_dir, "reports", f"{mode}-job{setup.job}-rank{rank}.json")


def log_path(setup: JobSetup, mode: str, rank: int) -> str:
    return os.path.join(setup.out_dir, "logs", f"{mode}-job{setup.job}-rank{rank}.log")


def _hosts_command(subcommand: str) -> list:
    return [python_executable(), "-m", "hosts", subcommand]


class InaMode:
    """In-network aggregation through the switches (hosts worker)."""
    name = "ina"

    def prepare(self, manager, setup: JobSetup):
        """Install the job's reduction tree; returns the plan passed to commands()."""
        return manager.start_job(setup.job, list(setup.hosts), setup.window)

    def finish(self, manager, setup: JobSetup) -> None:
        manager.stop_job(setup.job)

    def commands(self, setup: JobSetup, plan) -> list:
        commands = []
        for rank, host in enumerate(setup.hosts):
            member = plan.hosts[host]
            commands.append(_hosts_command("worker") + [
                "--job", str(setup.job), "--rank", str(rank), "--world", str(len(setup.hosts)),
                "--elements", str(setup.elements), "--dtype", setup.dtype,
                "--seed", str(setup.seed), "--window", str(setup.window), "--k", str(setup.k),
                "--switch-ip", member.switch_ip, "--contributor", str(member.contributor),
                "--json", report_path(setup, self.name, rank)])
        return commands


class RingMode:
    """Host-only ring allreduce over TCP (the baseline)."""
    name = "ring"

    def prepare(self, manager, setup: JobSetup):
        return None

    def finish(self, manager, setup: JobSetup) -> None:
        pass

    def commands(self, setup: JobSetup, plan) -> list:
        port = RING_FIRST_PORT + setup.job
        peers = ",".join(f"{ip}:{port}" for ip in setup.host_ips)
        return [_hosts_command("ring") + [
                    "--rank", str(rank), "--world", str(len(setup.hosts)), "--peers", peers,
                    "--elements", str(setup.elements), "--dtype", setup.dtype,
                    "--seed", str(setup.seed), "--json", report_path(setup, self.name, rank)]
                for rank in range(len(setup.hosts))]


MODES = {mode.name: mode for mode in (InaMode(), RingMode())}

