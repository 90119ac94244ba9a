"""Mininet networks for ina-emu, the lowest layer above the switches and hosts: the topology
description (spec), the switch node classes (switches), the compiled program (program), the
network builder (net) with its switch-restarting supervisor (supervisor) and link
impairments (impairment).  It knows nothing of the controller: the running, programmed
network is fabric/, the lab CLI lab/ (docs/design.md, Layers)."""
