"""The lab's Mininet CLI: Mininet's own commands (`h1 ping h2`, `nodes`, `net`, ...) plus
commands that drive the aggregation fabric.

    allreduce [JOB] [ELEMENTS] [DTYPE]   (re)install JOB and run in-network allreduce on its
                                         members (all hosts if JOB is not installed)
    ring [ELEMENTS] [DTYPE]              host-only ring allreduce over all hosts (the baseline)
    collective NAME [ALGORITHM] [ELEMENTS] [DTYPE]
                                         a collective over all hosts (one of
                                         contracts.jobs.COLLECTIVES), by ALGORITHM
                                         (a host algorithm, default: ring; broadcast:
                                         binomial-tree; or ina: in the switches)
    install JOB [HOST ...]               install JOB (all hosts by default) and print the
                                         worker command lines to type by hand
    uninstall JOB                        remove JOB's entries and free its slots
    tree [JOB]                           JOB's reduction tree as the controller plans it
    slots SWITCH [JOB]                   JOB's slot registers on SWITCH (bitmap, count, version)
    counters [SWITCH]                    drop-reason and event counters (non-zero)
    jobs                                 the installed jobs
    restarts                             switch processes that died and were restarted
    train [--modes ina,gloo] [--parallel hook,ddp,fsdp] [--model mlp|wide] ...
                                         PyTorch DDP/FSDP training on the hosts (the options of
                                         `python -m experiments train`, jobs/training.py)

Workers run in the Mininet hosts through the code `python -m experiments compare` uses
(jobs.modes and jobs.runner); their logs and JSON reports go below the work directory.  A
failing command prints one line starting with "error:" and returns to the prompt.
"""

from __future__ import annotations

import functools
import inspect
import os
import shlex
import subprocess
import sys
import time
from argparse import ArgumentTypeError

from mininet.cli import CLI
from mininet.log import setLogLevel

from contracts.cli import OneLineParser, one_line, positive_int
from contracts.jobs import ALLREDUCE, COLLECTIVES, DTYPES, INA, SUPPORTED
from contracts.requests import picked
from contracts.wire import DEFAULT_WINDOW
from fabric.telemetry import RegisterReader, format_slots, format_status, read_slots
from jobs.modes import (MODES, by_hand, check_collective, fabric_job_setup,
                        job_timeout_ms, switch_refusal)
from jobs.runner import run_job
from jobs.training import (TrainingRequest, add_training_arguments, failures, format_table,
                           run_all)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFAULT_JOB = 1
DEFAULT_ELEMENTS = 10000
DEFAULT_DTYPE = "int32"
RUN_TIMEOUT_S = 600.0


class CommandError(Exception):
    """A lab command that cannot be done: bad arguments or a refused request (one line)."""


def lab_command(method):
    """Run a CLI command; any error becomes one 'error: ...' line and the prompt returns."""
    @functools.wraps(method)
    def run(self, line):
        try:
            method(self, line)
        except Exception as error:      # the CLI must survive whatever a command hits
            self.say(f"error: {one_line(error)}")
    return run


def parse_arguments(line: str, usage: str, kinds: tuple) -> list:
    """Positional arguments of `line` converted by `kinds` (missing ones are None)."""
    words = line.split()
    if len(words) > len(kinds):
        raise CommandError(f"usage: {usage}")
    values = []
    for word, kind in zip(words, kinds):
        try:
            values.append(kind(word))
        except (ValueError, ArgumentTypeError):
            raise CommandError(f"usage: {usage} ({word!r} is not valid)") from None
    return values + [None] * (len(kinds) - len(values))


def dtype(text: str) -> str:
    if text not in DTYPES:
        raise ValueError(text)
    return text


class LabCLI(CLI):
    """Mininet's CLI over a running `fabric.Fabric`."""

    def __init__(self, fabric, work_dir: str, window: int = DEFAULT_WINDOW, stdin=sys.stdin,
                 script=None):
        """work_dir: where worker logs and reports go; window: slots per job.  Runs the
        command loop (or the script) before returning, as Mininet's CLI does."""
        self.fabric = fabric
        self.work_dir = os.path.abspath(work_dir)
        self.window = window
        self.readers: dict = {}
        setLogLevel("output")          # Mininet's own commands print at this level
        CLI.__init__(self, fabric.network.mininet, stdin=stdin, script=script)

    def precmd(self, line):
        """Echo commands that come from a pipe, so a transcript reads like a session."""
        if not self.inputFile and not self.isatty() and line != "EOF":
            self.say(line.rstrip("\n"))
        return CLI.precmd(self, line)

    def do_help(self, line):
        """help [COMMAND]: the commands, or what COMMAND does."""
        method = getattr(self, f"do_{line.strip()}", None) if line.strip() else None
        if method is not None and method.__doc__:
            self.say(inspect.cleandoc(method.__doc__))
        else:
            CLI.do_help(self, line)

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    # -- jobs ------------------------------------------------------------------------------

    @property
    def manager(self):
        return self.fabric.manager

    def host_names(self) -> list:
        return [h.name for h in self.fabric.spec.hosts]

    def installed(self, job: int):
        return self.manager.jobs().get(job)

    def install(self, job: int, hosts: list, design: str = INA):
        """Install JOB of `design` on `hosts`, replacing an installed JOB: a new installation
        has a new generation, so its slots start empty (a rerun on old slot state would be
        refused)."""
        if self.installed(job) is not None:
            self.manager.stop_job(job)
        return self.manager.start_job(job, hosts, self.window, design=design)

    def job_setup(self, job: int, hosts: list, elements: int, dtype_name: str, window: int,
                  collective: str = ALLREDUCE):
        return fabric_job_setup(self.fabric, job, hosts, elements, dtype_name, window,
                                self.work_dir, collective)

    def run_workers(self, mode, setup, plan):
        """Start the workers in their hosts, wait for them; (outcomes, Run)."""
        try:
            return run_job(self.fabric, mode, setup, plan, RUN_TIMEOUT_S)
        except KeyboardInterrupt:
            raise CommandError("interrupted: the workers were stopped") from None

    def report_run(self, outcomes: list, run, named: bool = False) -> None:
        """The outcome of each worker, then the run's; `named`: say the collective (the
        `collective` command's runs)."""
        for outcome in outcomes:
            report = outcome.report or {}
            if outcome.exit_code == 0 and report.get("correct") is True:
                self.say(f"  {outcome.host} rank {outcome.rank}: correct in "
                         f"{report['seconds']:.3f} s, {report['packets_sent']} packets / "
                         f"{report['bytes_sent'] / 1e6:.3f} MB sent, "
                         f"{report.get('retransmissions', 0)} retransmissions")
            else:
                why = outcome.error or report.get("error") or f"exit code {outcome.exit_code}"
                self.say(f"  {outcome.host} rank {outcome.rank}: FAILED: {why}")
        what = f"{run.mode} {run.collective}" if named else run.mode
        where = f"{what} job {run.job}, {run.elements} x {run.dtype} on {run.workers} workers"
        if run.correct:
            self.say(f"{where}: correct in {run.seconds:.3f} s "
                     f"({run.gbit_per_s:.4f} Gbit/s, {run.retransmissions} retransmissions)")
        else:
            self.say(f"{where}: NOT correct ({len(run.errors)} worker(s) failed; logs in "
                     f"{shown_path(os.path.join(self.work_dir, 'logs'))})")

    # -- commands ------------------------------------------------------------------------

    @lab_command
    def do_allreduce(self, line):
        """allreduce [JOB] [ELEMENTS] [DTYPE]: in-network allreduce of ELEMENTS (default
        10000) int32|float32 values over JOB's members (default job 1; all hosts if JOB is
        not installed).  JOB is (re)installed first and stays installed afterwards."""
        job, elements, dtype_name = parse_arguments(
            line, "allreduce [JOB] [ELEMENTS] [DTYPE]", (positive_int, positive_int, dtype))
        job = job or DEFAULT_JOB
        current = self.installed(job)
        hosts = list(current.hosts) if current is not None else self.host_names()
        plan = self.install(job, hosts)
        setup = self.job_setup(job, hosts, elements or DEFAULT_ELEMENTS,
                               dtype_name or DEFAULT_DTYPE, plan.window)
        self.say(f"allreduce job {job}: {len(hosts)} workers ({', '.join(hosts)}), root "
                 f"{plan.root}, window {plan.window}, K {setup.k}")
        self.report_run(*self.run_workers(MODES[INA], setup, plan))

    @lab_command
    def do_ring(self, line):
        """ring [ELEMENTS] [DTYPE]: host-only ring allreduce (TCP) over all hosts."""
        elements, dtype_name = parse_arguments(line, "ring [ELEMENTS] [DTYPE]",
                                               (positive_int, dtype))
        hosts = self.host_names()
        setup = self.job_setup(DEFAULT_JOB, hosts, elements or DEFAULT_ELEMENTS,
                               dtype_name or DEFAULT_DTYPE, self.window)
        self.say(f"ring allreduce: {len(hosts)} workers ({', '.join(hosts)})")
        self.report_run(*self.run_workers(MODES["ring"], setup, None))

    @lab_command
    def do_collective(self, line):
        """collective NAME [ALGORITHM] [ELEMENTS] [DTYPE]: the collective NAME
        ({collectives}) over all hosts by the host
        algorithm ALGORITHM (default ring, or the first that runs NAME: binomial-tree for
        broadcast and reduce), or in the switches with ALGORITHM a design: ina, switchml
        or atp (allreduce; job 1 is (re)installed in that design), as `experiments compare
        --collective NAME --modes ALGORITHM` runs it;
        every rank's result is checked (what the collective leaves it: the sum, its shard of
        the sum, every rank's shard, rank 0's vector, or at rank 0 the sum)."""
        usage = "collective NAME [ALGORITHM] [ELEMENTS] [DTYPE]"
        words = line.split()
        if not words or words[0] not in COLLECTIVES:
            raise CommandError(f"usage: {usage} (NAME: {', '.join(COLLECTIVES)})")
        name, rest = words[0], words[1:]
        algorithm = "ring" if "ring" in SUPPORTED[name] else SUPPORTED[name][0]
        if rest and rest[0] in MODES:
            algorithm, rest = rest[0], rest[1:]
        elements, dtype_name = parse_arguments(" ".join(rest), usage, (positive_int, dtype))
        mode = MODES[algorithm]
        refusal = (check_collective(mode, name, len(self.fabric.spec.switches), False,
                                    dtype_name or DEFAULT_DTYPE)
                   or switch_refusal(self.fabric.switch_kind, self.fabric.k, algorithm, name))
        if refusal:
            raise CommandError(refusal)
        hosts = self.host_names()
        plan = (self.install(DEFAULT_JOB, hosts, mode.name) if mode.design is not None
                else None)
        setup = self.job_setup(DEFAULT_JOB, hosts, elements or DEFAULT_ELEMENTS,
                               dtype_name or DEFAULT_DTYPE,
                               plan.window if plan is not None else self.window, name)
        self.say(f"{algorithm} {name}: {len(hosts)} workers ({', '.join(hosts)})")
        self.report_run(*self.run_workers(mode, setup, plan), named=True)

    @lab_command
    def do_install(self, line):
        """install JOB [HOST ...]: install JOB on the hosts (default all) and print the
        worker command lines to type at this prompt."""
        words = line.split()
        if not words:
            raise CommandError("usage: install JOB [HOST ...]")
        (job,) = parse_arguments(words[0], "install JOB [HOST ...]", (positive_int,))
        hosts = words[1:] or self.host_names()
        plan = self.install(job, hosts)
        self.say(plan.to_text())
        setup = self.job_setup(job, hosts, DEFAULT_ELEMENTS, DEFAULT_DTYPE, plan.window)
        self.say("run the workers by hand (all but the last in the background):")
        for line_text in self.worker_lines(setup, plan):
            self.say(f"  {line_text}")

    def worker_lines(self, setup, plan) -> list:
        """The CLI lines that run `setup`'s workers: `HOST COMMAND`, from the repository;
        each prints its JSON report (background ones into a log file)."""
        lines = []
        commands = by_hand(setup, plan)
        for rank, (host, command) in enumerate(zip(setup.hosts, commands)):
            text = " ".join(shlex.quote(shown_path(arg) if os.path.isabs(arg) else arg)
                            for arg in command)
            if rank < len(commands) - 1:
                log = shown_path(os.path.join(self.work_dir, f"hand-{host}.log"))
                text += f" > {log} 2>&1 &"
            lines.append(f"{host} {text}")
        return lines

    @lab_command
    def do_uninstall(self, line):
        """uninstall JOB: remove JOB's table entries and multicast groups, free its slots."""
        (job,) = parse_arguments(line, "uninstall JOB", (positive_int,))
        if job is None:
            raise CommandError("usage: uninstall JOB")
        self.manager.stop_job(job)
        self.say(f"job {job} uninstalled")

    @lab_command
    def do_tree(self, line):
        """tree [JOB]: JOB's reduction tree (default job 1): the installed one, or the tree
        the controller would plan over all hosts."""
        (job,) = parse_arguments(line, "tree [JOB]", (positive_int,))
        job = job or DEFAULT_JOB
        plan = self.installed(job)
        if plan is not None:
            self.say(plan.to_text())
            self.say(f"(installed, generation {plan.generation})")
            return
        plan = self.fabric.planned_tree(job, self.host_names(), self.window)
        self.say(plan.to_text())
        self.say("(not installed: the tree the controller plans over all hosts; "
                 "`allreduce` or `install` installs it)")

    @lab_command
    def do_slots(self, line):
        """slots SWITCH [JOB]: the slot registers of JOB (default: the only installed job,
        else job 1) on SWITCH: per slot version its state, round offset, contributor bitmap
        (contributor 0 rightmost), count, result flag, exponent, overflow and the first value."""
        words = line.split()
        if not words or len(words) > 2:
            raise CommandError("usage: slots SWITCH [JOB]")
        switch = words[0]
        (job,) = parse_arguments(" ".join(words[1:]), "slots SWITCH [JOB]", (positive_int,))
        plan = self.job_for_inspection(job)
        if switch not in plan.switches:
            raise CommandError(f"{switch} is not in job {plan.job_id}'s tree "
                               f"({', '.join(plan.switches)})")
        part = plan.switches[switch]
        cells = read_slots(self.reader(switch), part.slot_base, part.slot_count)
        self.say(format_slots(switch, plan.job_id, plan.generation, part.fan_in, cells))

    def job_for_inspection(self, job):
        jobs = self.manager.jobs()
        if job is None:
            job = next(iter(jobs)) if len(jobs) == 1 else DEFAULT_JOB
        if job not in jobs:
            raise CommandError(f"job {job} is not installed (see `jobs`; `allreduce {job}` or "
                               f"`install {job}` installs it)")
        return jobs[job]

    def reader(self, switch: str) -> RegisterReader:
        connection = self.fabric.connections.get(switch)
        cached = self.readers.get(switch)
        if cached is None or cached.connection is not connection:   # new after a restart
            if connection is None:
                raise CommandError(f"no switch named {switch}")
            # on bmv2 the connection reads registers over Thrift (controller.bmv2_registers)
            self.readers[switch] = RegisterReader(switch, connection)
        return self.readers[switch]

    @lab_command
    def do_counters(self, line):
        """counters [SWITCH]: non-zero drop-reason and event counters of SWITCH (default
        every switch)."""
        words = line.split()
        if len(words) > 1:
            raise CommandError("usage: counters [SWITCH]")
        connections = self.fabric.connections
        if words:
            if words[0] not in connections:
                raise CommandError(f"no switch named {words[0]}")
            connections = {words[0]: connections[words[0]]}
        self.say(format_status(self.manager.read_status(connections)))

    @lab_command
    def do_jobs(self, line):
        """jobs: the installed jobs with their members, root and slots."""
        if line.strip():
            raise CommandError("usage: jobs")
        jobs = self.manager.jobs()
        if not jobs:
            self.say("no jobs installed")
        for job, plan in sorted(jobs.items()):
            members = " ".join(f"{h}(c{p.contributor}@{p.switch})" for h, p in plan.hosts.items())
            self.say(f"job {job}: generation {plan.generation}, window {plan.window}, root "
                     f"{plan.root}, switches {' '.join(plan.switches)}, UDP port "
                     f"{plan.udp_port}; workers {members}")


    @lab_command
    def do_restarts(self, line):
        """restarts: switch processes that died, and whether the network restarted them and
        the controller reprogrammed them (pipeline, routes, installed jobs)."""
        if line.strip():
            raise CommandError("usage: restarts")
        if self.fabric.network.supervisor is None:
            self.say("switch restarts are off (--no-restart)")
            return
        counts = self.fabric.network.restarts()
        self.say("restarts: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
        for event in self.fabric.restart_events():
            self.say(event.describe())


    @lab_command
    def do_train(self, line):
        """train [--modes ina,gloo,ring] [--parallel hook,ddp,fsdp] [--model mlp|wide]
        [--workers N[,N...]] [--epochs E] [--batch B] [--hidden H] [--lr LR] [--momentum M]
        [--seed S] [--max-steps N] [--host-slowdown HOST=F] [--precision-check]: PyTorch
        training on the digits dataset (DDP with the ina hook, DDP or FSDP2 on the ina
        process group: --parallel),
        one training process per host, as `python -m experiments train` on this network
        (the first n hosts for each n in --workers; default all).  Results and figures go
        to a train-N folder of the work directory; a table is printed."""
        parser = OneLineParser(prog="train", description="DDP training on the hosts.",
                               add_help=False)        # help train shows this docstring
        add_training_arguments(parser)
        training = TrainingRequest(**picked(parser.parse_args(shlex.split(line)),
                                            TrainingRequest, leave=("window",)),
                                   window=self.window)
        counts = training.worker_counts(self.host_names(), "this network")
        job = 1 + max(self.manager.jobs(), default=0)       # beside the installed jobs
        out_dir = os.path.join(self.work_dir, f"train-{job}-{int(time.time())}")
        meta = {"command": ["train"] + shlex.split(line), "k": self.fabric.k,
                "window": self.window, "host_slowdown": training.host_slowdown,
                "cpus": os.cpu_count()}
        runs, checks, path = run_all(
            self.fabric, training, counts, out_dir, meta,
            job_timeout_ms(self.fabric.spec, self.fabric.switch_kind, self.fabric.k,
                           max(counts), self.window),
            say=lambda text: self.say(f"train: {text}"), job=job)
        figures = draw_training_figures(out_dir)
        self.say(format_table(runs))
        self.say(f"train: wrote {shown_path(path)}" + "".join(f", {shown_path(f)}"
                                                             for f in figures))
        failed = failures(runs, checks)
        if failed:
            raise CommandError(failed)


# help collective lists the registry's collectives
LabCLI.do_collective.__doc__ = LabCLI.do_collective.__doc__.format(
    collectives=", ".join(COLLECTIVES))


def draw_training_figures(out_dir: str) -> list:
    """The figures of out_dir/results.json, drawn by `python -m experiments train-plot` (a
    process of its own: the lab imports nothing of experiments); their paths."""
    drawn = subprocess.run([sys.executable, "-m", "experiments", "train-plot", out_dir],
                           cwd=REPO, capture_output=True, text=True)
    if drawn.returncode != 0:
        raise CommandError(f"train-plot: {one_line(drawn.stderr) or 'failed'}")
    return drawn.stdout.split()


def shown_path(path: str) -> str:
    """A path as typed at the prompt (whose working directory is the repository)."""
    inside = os.path.commonpath([os.path.abspath(path), REPO]) == REPO
    return os.path.relpath(path, REPO) if inside else path

