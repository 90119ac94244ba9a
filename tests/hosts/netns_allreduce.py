"""Run `python -m hosts allreduce` on N hosts made of network namespaces and veth pairs, and
report the bytes each host's interface sent and received over the run (kernel counters).

Meant to run as root inside a private network namespace (tests/topologies/private_netns.py),
which becomes the router: host i is a namespace held by a `sleep` process, with eth0 at
10.0.i.2/24, whose veth peer r<i> (10.0.i.1) is here, with IPv4 forwarding on.  IPv6 is off
(no router solicitations or DAD in the counts) and so are TSO, GSO and GRO, so the counters
count the frames as they would be on a wire.  The report is one JSON object on stdout:
{"exit_codes": [...], "errors": [...], "tx_bytes": [...], "rx_bytes": [...],
"retransmitted_segments": [...]}, per rank (the last: TCP segments the host sent again,
RetransSegs of its namespace's /proc/net/snmp).

    python tests/hosts/netns_allreduce.py ALGORITHM WORLD ELEMENTS SEED OUT_DIR [COLLECTIVE]

(COLLECTIVE: --collective of `hosts allreduce`, default allreduce.)
"""

import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from jobs.counters import (namespace_tcp_retransmitted_segments,  # noqa: E402
                                  namespace_traffic)

PORT = 7000
OFFLOADS_OFF = "tso off gso off gro off"


def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)


def start_host() -> subprocess.Popen:
    """A process in a new network namespace, once it is there."""
    holder = subprocess.Popen(["unshare", "--net", "sleep", "300"])
    own = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + 10
    while os.readlink(f"/proc/{holder.pid}/ns/net") == own:
        if time.monotonic() > deadline:
            raise RuntimeError("unshare did not enter a new network namespace")
        time.sleep(0.01)
    return holder


def in_host(pid: int, argv: list) -> list:
    return ["nsenter", f"--net=/proc/{pid}/ns/net"] + argv


def main(algorithm: str, world: int, elements: int, seed: int, out_dir: str,
         collective: str = "allreduce") -> dict:
    with open("/proc/sys/net/ipv4/ip_forward", "w") as f:
        f.write("1")
    for scope in ("all", "default"):
        sh("sysctl", "-qw", f"net.ipv6.conf.{scope}.disable_ipv6=1")
    holders = []
    try:
        for i in range(world):
            holder = start_host()
            holders.append(holder)
            sh("ip", "link", "add", f"r{i}", "type", "veth", "peer", "name", "eth0", "netns",
               str(holder.pid))
            sh(*in_host(holder.pid, ["sh", "-ec", (
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
                "net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.eth0.disable_ipv6=1\n"
                f"ethtool -K eth0 {OFFLOADS_OFF}\n"
                f"ip addr add 10.0.{i}.2/24 dev eth0\n"
                "ip link set lo up\nip link set eth0 up\n"
                f"ip route add default via 10.0.{i}.1\n")]))
            sh("ethtool", "-K", f"r{i}", *OFFLOADS_OFF.split())
            sh("ip", "addr", "add", f"10.0.{i}.1/24", "dev", f"r{i}")
            sh("ip", "link", "set", f"r{i}", "up")
        peers = ",".join(f"10.0.{i}.2:{PORT}" for i in range(world))
        before = [namespace_traffic(h.pid, "eth0") for h in holders]
        resent_before = [namespace_tcp_retransmitted_segments(h.pid) for h in holders]
        ranks = []
        for rank, holder in enumerate(holders):
            log = open(os.path.join(out_dir, f"{rank}.log"), "wb")
            ranks.append(subprocess.Popen(in_host(holder.pid, [
                sys.executable, "-m", "hosts", "allreduce", "--algorithm", algorithm,
                "--collective", collective,
                "--rank", str(rank), "--world", str(world), "--peers", peers,
                "--elements", str(elements), "--seed", str(seed), "--timeout-s", "60",
                "--json", os.path.join(out_dir, f"{rank}.json")]),
                cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))
            log.close()
        codes = [process.wait(timeout=120) for process in ranks]
        after = [namespace_traffic(h.pid, "eth0") for h in holders]
        resent = [namespace_tcp_retransmitted_segments(h.pid) - earlier
                  for h, earlier in zip(holders, resent_before)]
        errors = []
        for rank in range(world):
            with open(os.path.join(out_dir, f"{rank}.log")) as f:
                errors.append(f.read())
        return {"exit_codes": codes, "errors": errors,
                "tx_bytes": [a.tx_bytes - b.tx_bytes for a, b in zip(after, before)],
                "rx_bytes": [a.rx_bytes - b.rx_bytes for a, b in zip(after, before)],
                "retransmitted_segments": resent}
    finally:
        for i, holder in enumerate(holders):
            subprocess.run(["ip", "link", "del", f"r{i}"], capture_output=True)
            holder.kill()
            holder.wait()


if __name__ == "__main__":
    name, n, e, s, out, *rest = sys.argv[1:]
    print(json.dumps(main(name, int(n), int(e), int(s), out, *rest)))
