"""The P4Runtime service: a sans-I/O core over RuntimeState plus a gRPC binding."""

from .core import P4RuntimeCore, ReadResult
from .device import Device, NullDevice, PipelineLoadError
from .errors import Code, P4RuntimeError

__all__ = ["P4RuntimeCore", "ReadResult", "Device", "NullDevice", "PipelineLoadError", "Code", "P4RuntimeError"]
