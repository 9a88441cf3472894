"""The v1model pipeline compiler and interpreter (see pipeline.py for the loader)."""

from .packet import CloneRequest, Packet, PreserveRequest
from .pipeline import PipelineRuntimeError, V1Pipeline, load_pipeline
from .scope import PipelineError

__all__ = ["load_pipeline", "V1Pipeline", "Packet", "CloneRequest", "PreserveRequest", "PipelineError",
           "PipelineRuntimeError"]
