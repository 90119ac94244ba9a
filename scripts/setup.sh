#!/usr/bin/env bash
# Installs what the project needs on a Debian/Ubuntu machine: system packages
# (mininet, iproute2, ethtool, ...) and a .venv with the pinned Python dependencies.
# With --all (`make setup-all`, which `make test` uses) also the optional parts: vagrant,
# the shellcheck linter, SimGrid's development files and an SSH server for --cluster.
# Idempotent: does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(mininet iproute2 iputils-ping ethtool tcpdump iperf3 python3-venv python3-dev gcc make
              clang libbpf-dev)  # p4switch's xdp back end: BPF C built by clang, loaded by libbpf
OPTIONAL_PACKAGES=(vagrant shellcheck   # vagrant and shellcheck: the lab-VM file checks in the tests
              python3-simgrid      # experiments simulate: PyPI's simgrid is a source build that fails here
              libsimgrid-dev g++ libjemalloc-dev  # experiments simulate: its C++ actors (simulation/simcore.cpp)
              openssh-server sudo  # --cluster (Mininet's cluster mode runs ssh and sudo); its test's sshd
              bpftool)             # scripts/bench-xdp.sh, bench_veth --backend xdp: the XDP programs' run time
case ${1:-} in
    --all) APT_PACKAGES+=("${OPTIONAL_PACKAGES[@]}") ;;
    "") ;;
    *) echo "usage: scripts/setup.sh [--all]" >&2; exit 2 ;;
esac

# Real p4c and bmv2 (p4switch/p4lang.py): a bundle at $P4LANG_HOME or ../shared/p4lang needs these
# Debian runtime packages (its README lists them); the lab VM's packaged p4c and bmv2 bring their own.
P4LANG_BUNDLE=${P4LANG_HOME:-../shared/p4lang}
if [[ -x $P4LANG_BUNDLE/bin/p4c-bm2-ss || -x $P4LANG_BUNDLE/bin/simple_switch_grpc ]]; then
    APT_PACKAGES+=(cpp libgc1 libprotobuf32 libboost-iostreams1.74.0 libboost-program-options1.74.0
                   libgmp10 libjsoncpp25 libnanomsg5 libpcap0.8 libthrift-0.17.0 libxxhash0 libssl3
                   python3 python3-thrift python3-scapy python3-ply
                   libgrpc++1.51 libgrpc29 libabsl20220623 libc-ares2 libre2-9 libprotoc32)
elif [[ ${CI:-} == true ]]; then
    echo "setup: no p4lang toolchain at ${P4LANG_BUNDLE} (CI=true needs real p4c and bmv2)" >&2
fi

# The xdp back end builds for BPF's v4 instruction set with clang 18 or later, whose long jumps
# p4src/main.p4 needs at K = 256 (p4switch/backend/xdp/loader.py): the newest apt offers.
newest_bpf_clang() {
    local version
    for version in 22 21 20 19 18; do
        # (not `apt-cache | grep -q`: grep's early exit fails the pipe under pipefail)
        if dpkg -s "clang-$version" >/dev/null 2>&1 ||
                [[ $(apt-cache policy "clang-$version" 2>/dev/null) == *"Candidate: "[0-9]* ]]; then
            echo "clang-$version"
            return
        fi
    done
}
bpf_clang=$(newest_bpf_clang)
# A fresh box may have no package lists yet: read them before concluding there is none.
if [[ -z $bpf_clang && $(id -u) -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    bpf_clang=$(newest_bpf_clang)
fi
if [[ -n $bpf_clang ]]; then
    APT_PACKAGES+=("$bpf_clang")
else
    echo "setup: no clang 18 or later in apt: the xdp back end builds for BPF v3, which takes p4src/main.p4 up to K = 128" >&2
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "setup: system packages missing (${missing[*]}); run as root: sudo make setup${1:+-all}" >&2
        exit 2
    fi
    echo "setup: installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The venv uses the distribution's python3 so that its mininet module is importable.
PYTHON=/usr/bin/python3
stamp=.venv/.requirements.sha
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "setup: creating .venv with pinned Python dependencies"
    "$PYTHON" -m venv --system-site-packages .venv
    if ! .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt >.venv/pip.log 2>&1; then
        grep -v '^WARNING: Location' .venv/pip.log >&2
        echo "setup: pip install failed (log: .venv/pip.log)" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
