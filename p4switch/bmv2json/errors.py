"""The one error the BMv2 JSON loader raises: what is wrong, at which JSON path.

Why a path and not a line: a JSON written by p4c is one long line; the path
(``pipelines[0].tables[3].match_type``) is what a user can look up with ``jq``.
"""

from __future__ import annotations


class Bmv2JsonError(Exception):
    """A BMv2 JSON the loader refuses: ``path`` names the object, ``message`` says why."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
