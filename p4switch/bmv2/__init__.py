"""Real bmv2 as a fourth way to run a program: p4c's bmv2 back end (p4c-bm2-ss) compiles it,
p4lang's simple_switch runs it, and the STF comparison our own back ends use judges it.  It
is the reference our Python and C back ends are checked against (tests/bmv2, docs/bmv2.md).

One concept per module:
  compiler  p4c-bm2-ss -> bmv2 JSON + P4Info, p4c's errors as one line
  process   one simple_switch: start, packets over its nanomsg packet-in socket, stop
  tracker   when simple_switch has finished with a packet, from its log
  nanomsg   the nanomsg sockets (ctypes on the libnanomsg simple_switch links)
  thrift    bmv2's Thrift runtime clients (standard, simple_switch, simple_pre_lag)
  control   STF control-plane commands as Thrift calls; register and counter reads
  digests   learning notifications decoded into digests
  runner    the STF runner on bmv2 (stf.StfDriver's hooks), run_stf_file for the CLI

The tools are found by p4switch.p4lang ($P4LANG_HOME, ../shared/p4lang, PATH).
"""
