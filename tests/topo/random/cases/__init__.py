"""Random topologies the fuzzer found, kept as named cases: fixed ones as regression tests, open ones as strict xfails
(their files are in tests/topo/random_cases/)."""
