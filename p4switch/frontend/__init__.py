"""P4_16 front end: preprocess -> parse -> check -> P4Info (see docs/architecture.md).

A pass is a module (``preprocess``, ``parser``, ``check``, ``p4info``); ``passes.compile_file``
runs the first three on a file. The package itself imports nothing, so that its modules can
import each other through it (``from p4switch.frontend import ast``) without a circle, and
importing it (e.g. for ``hbh --help``) is cheap.
"""
