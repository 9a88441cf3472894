"""The control plane: P4Runtime client, switch agent, the ALINEA law and its forecast.

``native.choose()`` decides, before any submodule is imported, whether the control path's modules
run compiled (mypyc, built by `make setup`) or interpreted.
"""

from controlplane import native as _native

_native.choose()
