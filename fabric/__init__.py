"""A running fabric: the compiled aggregation program on a started network (topologies),
programmed and kept programmed by the aggregation manager (controller), with the network's
supervisor restarting switch processes that die (fabric.running), and the switches'
telemetry (fabric.telemetry: slot registers, drop and event counters)."""

from fabric.running import (SETUP_ERRORS, Fabric, FabricError,  # noqa: F401
                            add_fabric_arguments, requested, switch_backend)
