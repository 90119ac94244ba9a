"""Runs tests/hosts/torch_backend_ranks.py on h1 and h2 of a Mininet star:2 (builtin switch):
starts the network, installs one job over P4Runtime (the aggregation manager), gives each
host its part (hosts/torch_backend.InaOptions from the job's plan), waits for both ranks and
removes the job.  Usage: torch_backend_mininet.py OUT_DIR SEED DDP_STEPS; exit 0 when both
ranks exited 0 (their .npz and .json files are in OUT_DIR, their logs in OUT_DIR/logs)."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from fabric import Fabric  # noqa: E402
from topologies.spec import parse_topology  # noqa: E402
from topologies.switches import python_executable  # noqa: E402

JOB, WINDOW, K = 3, 16, 64
MASTER_PORT = 29533


def main(out_dir: str, seed: str, ddp_steps: str) -> int:
    spec = parse_topology("star:2")
    os.makedirs(os.path.join(out_dir, "logs"), exist_ok=True)
    fabric = Fabric(spec, "builtin", k=K, log_dir=os.path.join(out_dir, "logs"))
    hosts = [h.name for h in spec.hosts]
    codes = []
    with fabric:
        plan = fabric.manager.start_job(JOB, hosts, WINDOW)
        try:
            processes = []
            for rank, host in enumerate(hosts):
                member = plan.hosts[host]
                command = [python_executable(),
                           os.path.join(REPO, "tests", "hosts", "torch_backend_ranks.py"),
                           "--rank", str(rank), "--world", str(len(hosts)),
                           "--master", f"{spec.host(hosts[0]).ip}:{MASTER_PORT}",
                           "--job", str(JOB), "--contributor", str(member.contributor),
                           "--k", str(K), "--window", str(WINDOW),
                           "--switch-ip", member.switch_ip, "--switch-port", "9100",
                           "--bind", "0.0.0.0", "--seed", seed, "--ddp-steps", ddp_steps,
                           "--out", os.path.join(out_dir, f"rank{rank}.npz")]
                with open(os.path.join(out_dir, "logs", f"rank{rank}.log"), "wb") as log:
                    processes.append(fabric.network.popen(
                        host, command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log,
                        stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": REPO}))
            codes = [process.wait(timeout=300) for process in processes]
        finally:
            fabric.manager.stop_job(JOB)
    print(codes, flush=True)
    return 0 if codes == [0] * len(hosts) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
