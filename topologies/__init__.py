"""Mininet topologies for ina-emu: the topology description (spec), switch node classes (switches)
and the network builder (net); `python -m topologies run --topo T`."""
