"""Experiments for ina-emu: `python -m experiments compare|sweep` run allreduce modes
(in-network aggregation, the ring baseline, torch.distributed Gloo) on one emulated network
and write results.json with interface byte counters and a median/spread summary;
`python -m experiments plot DIR` draws the figures and the Markdown table."""
