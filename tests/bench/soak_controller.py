"""One controller of the soak benchmark, run as its own process so that it can be SIGKILLed.

    python -m tests.bench.soak_controller ADDR P4INFO_TXT ELECTION_LOW SECONDS

It becomes primary (printing how long that took), then loops until killed or SECONDS pass:
inserts 50 ipv4_lpm entries (one Write), reads the table, deletes them (one Write), sends
20 PacketOuts to the CPU port (alinea.p4 sends them back: PacketIns) and 5 out of port 2.
Every second it prints a JSON line with its cumulative counts, so the parent knows what it
did even after a SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from tests.bench.p4rt_writes import RawController, frame, lpm_updates, packet_out

SOAK_DPORT_OUT = 47002  # UDP destination port of the PacketOuts sent out of port 2


#: the soak controllers' entries: ``ENTRIES`` /24 prefixes under ``FIRST_OCTET``.0.0.0/8
FIRST_OCTET, ENTRIES = 12, 50


def delete_leftovers(ctl: RawController, p4info: p4info_pb2.P4Info) -> None:
    """Delete what a SIGKILLed controller left in ``ipv4_lpm`` (it may die between its insert
    and its delete): 50 entries of a 1024-entry table that the next writer would otherwise
    find full. Entries that are not there fail with NOT_FOUND, one by one, and are ignored."""
    with contextlib.suppress(Exception):
        ctl.write(lpm_updates(p4info, pb.Update.DELETE, ENTRIES, first_octet=FIRST_OCTET))


def main() -> None:
    addr, info_path, low, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    p4info = text_format.Parse(Path(info_path).read_text(), p4info_pb2.P4Info())
    t0 = time.monotonic()
    ctl = RawController(addr, election_low=low, timeout=5)
    print(json.dumps({"primary_after_s": time.monotonic() - t0}), flush=True)
    cpm = next(c for c in p4info.controller_packet_metadata if c.preamble.name == "packet_out")
    inserts = lpm_updates(p4info, pb.Update.INSERT, ENTRIES, first_octet=FIRST_OCTET)
    deletes = lpm_updates(p4info, pb.Update.DELETE, ENTRIES, first_octet=FIRST_OCTET)
    table_id = next(t.preamble.id for t in p4info.tables if t.preamble.name == "MyIngress.ipv4_lpm")
    to_cpu = packet_out(cpm, 255, b"\x00\x00" + frame(47003))
    to_h2 = packet_out(cpm, 2, frame(SOAK_DPORT_OUT))
    counts = {"writes": 0, "reads": 0, "packet_outs": 0, "packet_ins": 0, "errors": 0}
    last_report = time.monotonic()
    end = t0 + seconds
    delete_leftovers(ctl, p4info)  # of the controller killed before us
    while time.monotonic() < end:
        for step in ("insert", "read", "delete"):
            try:
                if step == "read":
                    req = pb.ReadRequest(device_id=0)
                    req.entities.add().table_entry.table_id = table_id
                    for _ in ctl.stub.Read(req, timeout=5):
                        pass
                    counts["reads"] += 1
                else:
                    ctl.write(inserts if step == "insert" else deletes)
                    counts["writes"] += 1
            except Exception as exc:  # noqa: BLE001 - counted and reported, the soak goes on
                counts["errors"] += 1
                counts["last_error"] = f"{step}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        for _ in range(20):
            ctl.send(to_cpu)
        for _ in range(5):
            ctl.send(to_h2)
        counts["packet_outs"] += 25
        while not ctl.received.empty():
            msg = ctl.received.get_nowait()
            kind = msg.WhichOneof("update")
            if kind == "packet":
                counts["packet_ins"] += 1
            elif kind == "error":
                counts["errors"] += 1
                counts["last_error"] = msg.error.message[:200]
        time.sleep(0.05)
        if time.monotonic() - last_report >= 1.0:
            print(json.dumps(counts), flush=True)
            last_report = time.monotonic()
    print(json.dumps(counts), flush=True)
    ctl.close()


if __name__ == "__main__":
    main()
