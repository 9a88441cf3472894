"""Table-driven reflected CRCs: the one table builder the pipeline's hash algorithms and the ports'
checksum offload (CRC32c of SCTP) share."""

from __future__ import annotations


def reflected_crc_table(poly: int) -> list[int]:
    """Byte-at-a-time table of a reflected CRC with the (bit-reversed) polynomial ``poly``."""
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table
