"""Errors raised by the runtime state, carrying a canonical status code.

The state is written by the P4Runtime server, which must answer every refused
update with the status code the P4Runtime specification prescribes. The state
knows *why* it refuses (size limit, duplicate, bad mask...), so it picks the code
itself; the server only copies it into a ``p4.v1.Error``.
"""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    """The canonical codes of ``google.rpc.Code`` (numbers fixed by gRPC)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14


class StateError(Exception):
    """A refused read or write; ``code`` says which canonical status applies."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = Code(code)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def invalid(message: str) -> StateError:
    return StateError(Code.INVALID_ARGUMENT, message)


def not_found(message: str) -> StateError:
    return StateError(Code.NOT_FOUND, message)
