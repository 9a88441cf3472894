"""P4_16 front end: preprocess -> parse -> check -> P4Info (see docs/architecture.md)."""
