"""P4RuntimeError: an RPC-level failure with its canonical code and per-item details."""

from __future__ import annotations

from collections.abc import Sequence

from p4.v1 import p4runtime_pb2

from p4switch.state.errors import Code, StateError

__all__ = ["Code", "P4RuntimeError", "StateError", "to_p4_error"]


class P4RuntimeError(Exception):
    """Ends an RPC (or a stream) with ``code``; ``details`` are the per-update/per-read
    ``p4.v1.Error`` messages P4Runtime packs into ``google.rpc.Status.details``."""

    def __init__(self, code: Code, message: str, details: Sequence[p4runtime_pb2.Error] = ()) -> None:
        super().__init__(message)
        self.code = Code(code)
        self.message = message
        self.details = list(details)

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def to_p4_error(code: Code, message: str = "") -> p4runtime_pb2.Error:
    err = p4runtime_pb2.Error(canonical_code=int(code))
    if code != Code.OK:
        err.message = message
    return err
