"""The lab: `python -m lab` starts a programmed network (fabric) and keeps it up, or opens
Mininet's CLI on it with commands that run collective jobs through the jobs layer and read
the switches' telemetry (lab.cli).  The top layer: nothing imports it, and it imports only
fabric, jobs and contracts (each verb is a call on them; the training figures are drawn by
`python -m experiments train-plot`, run as a process)."""
