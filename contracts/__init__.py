"""What every part of ina-emu agrees on, with no dependency on any of them: the wire and
service contracts of the aggregation protocol (contracts.wire, checked against p4src by
tests/contracts) and the command-line conventions every `python -m ...` follows
(contracts.cli: one-line errors, exit statuses 2/1/130, SIGTERM).  This package imports
nothing but the standard library, so p4switch and hosts may use it (docs/design.md, Layers)."""
