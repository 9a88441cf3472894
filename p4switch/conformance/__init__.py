"""Conformance of p4switch against p4c's own test corpus (``testdata/`` of p4lang/p4c).

``python -m p4switch.conformance --testdata DIR --out docs/conformance.md`` runs every
program of ``p4_16_samples`` and ``p4_16_errors`` through p4switch's front end, each in a
worker process with a time limit (``pool.py``), compares the P4Info with p4c's expected
``p4_16_samples_outputs/<name>.p4info.txtpb`` (``p4info_diff.py``), runs the STF tests of
v1model samples through ``p4switch.stf`` when that package exists, classifies the outcomes
(``classify.py``) and writes the report (``report.py``). The corpus is never needed by
``make test``: the unit tests use a tiny corpus of their own.
"""
