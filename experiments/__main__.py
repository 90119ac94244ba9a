"""`python -m experiments compare|sweep|linkrate ...` (experiments/compare.py, sweep.py,
linkrate.py),
`python -m experiments train ...` (DDP training through the network, train.py),
`python -m experiments train-plot DIR [--out FIGDIR]` (its figures again, train_plot.py),
`python -m experiments plot DIR [--out FIGDIR]` (figures and a Markdown table, plot.py) and
`python -m experiments table DIR...` (one table of the runs in DIR/results.json files, exit 1
if any is not correct), `python -m experiments simulate|calibrate ...` (SimGrid simulation,
experiments/simulate.py; against the emulator, calibrate.py), `python -m experiments soak
...` (many allreduces on one network, leak checks, soak.py).  One-line errors: exit 2 bad
input, 1 failed run or setup, 130 interrupted."""

import sys

from contracts.cli import OneLineParser, UsageError, dispatch, run_command
from experiments import calibrate, compare, linkrate, scaling_figure, simulate, soak, sweep
from fabric import SETUP_ERRORS
from jobs import results


def table_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments table",
                      description="One table of the runs in each DIR/results.json; exit 1 if "
                                  "any run is not correct.")
    p.add_argument("directories", nargs="+", metavar="DIR")
    return p


def table(argv: list) -> int:
    argv = table_parser().parse_args(argv).directories
    try:
        runs = [run for directory in argv for run in results.load_runs(directory)]
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(results.format_table(runs))
    from experiments.aggregate import allowed_lines, summarize_runs   # numpy: for tables only
    for line in allowed_lines(summarize_runs(runs)):
        print(line)
    return 0 if runs and all(run.correct for run in runs) else 1


def plot(argv: list) -> int:
    from experiments import plot as plotting    # matplotlib (a second to load) only to plot
    return plotting.main(argv)


def train(argv: list) -> int:
    from experiments import train as training  # matplotlib (a second to load) only to train
    return training.main(argv)


def train_plot(argv: list) -> int:
    from experiments import train_plot as plotting    # matplotlib only to plot
    return plotting.main(argv)


COMMANDS = {"compare": compare.main, "sweep": sweep.main, "linkrate": linkrate.main,
            "plot": plot, "table": table, "train": train, "train-plot": train_plot,
            "simulate": simulate.main, "calibrate": calibrate.main,
            "scaling-figure": scaling_figure.main, "soak": soak.main}


# One line per command for `python -m experiments --help`; each command's own --help has
# its options and their defaults.
SUMMARIES = {"compare": "run allreduce modes on one emulated network and compare them",
             "sweep": "compare over lists of vector sizes and worker counts",
             "linkrate": "in-network aggregation against its link bound, per link rate and "
                         "switch back end",
             "plot": "figures and a Markdown table from DIR/results.json",
             "table": "one table of the runs in DIR/results.json files",
             "train": "PyTorch DDP training on the emulated network",
             "train-plot": "redraw train's figures",
             "simulate": "allreduce modes on a simulated network (SimGrid)",
             "calibrate": "simulation against emulation on the same points",
             "scaling-figure": "completion time and ring/ina against workers (simulated)",
             "soak": "many allreduces back to back on one network, with leak checks"}


def main(argv: list) -> int:
    return dispatch("python -m experiments", COMMANDS, SUMMARIES, argv)


def run(argv: list) -> int:
    return run_command(lambda: main(argv), failures=SETUP_ERRORS)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
