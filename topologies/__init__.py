"""Mininet topologies for ina-emu: the topology description (spec), switch node classes (switches),
the network builder (net) with its switch-restarting supervisor (supervisor), the programmed
fabric (fabric) and the lab CLI (cli); `python -m topologies run --topo T`."""
