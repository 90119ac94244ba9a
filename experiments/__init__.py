"""Experiments for ina-emu: `python -m experiments compare` runs allreduce modes (in-network
aggregation, ring) on an emulated network and writes results.json and a table."""
