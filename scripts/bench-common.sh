# shellcheck shell=bash
# What the bench scripts (scripts/bench-cores.sh, scripts/bench-xdp.sh) start with; each
# sources it from the repository root.
#
# bench_begin NAME sets PY (the project's Python), WORK (a scratch folder /tmp/NAME.XXXXXX,
# removed when the script exits), STARTED (the UTC time now) and LOAD_START (the load
# averages now), which the script's results file records.
# shellcheck disable=SC2034  # set for the script that sources this
bench_begin() {
    PY=.venv/bin/python
    WORK=$(mktemp -d "/tmp/$1.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    STARTED=$(date -u +%Y-%m-%dT%H:%M:%S+00:00)
    LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
}
