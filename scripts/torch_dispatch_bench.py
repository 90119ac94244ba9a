"""What the Python route of the `ina` backend costs per collective (docs/results/training.md,
"Python ProcessGroup or C++ backend"): `dist.all_reduce(t, async_op=True).wait()` on one
process with world size 1, so that no byte moves and only the dispatch is timed: torch's
Python API into the group, and for ina the queue, worker thread and future of
hosts/torch_backend.py, against Gloo's C++ backend taking the same call.

    .venv/bin/python scripts/torch_dispatch_bench.py [CALLS]

Prints the median microseconds per call of each, for a 1-element and a 1,000-element float32
tensor.  Timing: run it under flock /tmp/emulation.lock on a quiet machine."""

import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hosts import torch_backend  # noqa: E402


def per_call_us(calls: int, elements: int) -> float:
    tensor = torch.ones(elements)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        dist.all_reduce(tensor, async_op=True).wait()
        samples.append(time.perf_counter() - started)
    samples.sort()
    return samples[len(samples) // 2] * 1e6


def main(argv) -> int:
    calls = int(argv[0]) if argv else 2000
    torch.set_num_threads(1)
    for backend in ("gloo", "cpu:ina"):
        options = (torch_backend.InaOptions(job=1, switch_ip="127.0.0.1", contributor=0)
                   if backend == "cpu:ina" else None)
        with tempfile.TemporaryDirectory() as folder:    # torch deletes its file store
            dist.init_process_group(backend, init_method=f"file://{folder}/store", rank=0,
                                    world_size=1, pg_options=options)
            results = {n: per_call_us(calls, n) for n in (1, 1000)}
            dist.destroy_process_group()
        print(f"{backend:8} " + "  ".join(f"{n} elements: {us:7.1f} us/call"
                                          for n, us in results.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
