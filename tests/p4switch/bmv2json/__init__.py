"""p4switch running p4c's BMv2 JSON (p4switch/bmv2json/): the loader's refusals and the CLI's positional
program, the JSON against the same program read from source (the fixtures in tests/fixtures/bmv2-json/),
the simulator's run on it, P4Runtime's device config pushed as BMv2 JSON, and the netns backend's choice
of JSON or source.
"""
