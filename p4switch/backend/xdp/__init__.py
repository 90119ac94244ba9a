"""The XDP back end: the v1model pipeline in the kernel, as an eBPF program on the ports'
veths (see docs/native.md, "The XDP back end").

- emit.py     the C emitter's pipeline retargeted at eBPF, with maps for tables and counters
- runtime/    p4x.h (what the generated code runs on) and p4x_main.inc (the XDP program)
- loader.py   clang -target bpf, libbpf: objects, maps, BPF_PROG_TEST_RUN, attach
- binding.py  XdpSwitch: the Switch API over the loaded program
"""
