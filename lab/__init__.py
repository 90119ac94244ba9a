"""The lab: `python -m lab` starts a programmed network (fabric) and keeps it up, or opens
Mininet's CLI on it with commands that run allreduce jobs through experiments' run machinery
and read the switches' telemetry (lab.cli).  The top layer: nothing imports it."""
