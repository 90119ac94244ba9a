"""`python -m topologies run ...`: the old name of `python -m lab ...`, kept for one release.

It prints a one-line notice and replaces itself with `python -m lab` (exec, so signals and the
exit status are the lab's own).  An exec rather than an import: topologies sits below the lab
and must not import it (docs/design.md, Layers)."""

import os
import sys


def main(argv: list) -> int:
    if not argv or argv[0] != "run":
        print("error: python -m topologies: the command is now `python -m lab --topo T ...` "
              "(`python -m topologies run` is its old name)", file=sys.stderr)
        return 2
    print("notice: `python -m topologies run` is now `python -m lab`; the old name goes in the "
          "next release", file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "lab", *argv[1:]])
    return 1    # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
