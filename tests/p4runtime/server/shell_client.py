"""Drives a P4Runtime server with the real p4runtime-shell; run as a subprocess.

p4runtime-shell keeps one global client, so each run gets its own process. The
script prints one JSON object with what it observed; the test asserts on it.
Usage: python -m tests.p4runtime.server.shell_client ADDR P4INFO_TXT DEVICE_CONFIG
"""

from __future__ import annotations

import json
import sys

from google.protobuf import json_format
from p4runtime_sh import shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException


def lpm_entry(port: str) -> sh.TableEntry:
    te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.forward")
    te.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
    te.action["port"] = port
    te.action["dmac"] = "00:00:00:00:aa:bb"
    return te


def read_lpm() -> list[dict]:
    return [json_format.MessageToDict(e.msg()) for e in sh.TableEntry("MyIngress.ipv4_lpm").read()]


def main(addr: str, p4info: str, device_config: str) -> dict:
    out: dict = {}
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(p4info, device_config),
             verbose=False)
    try:
        out["api_version"] = sh.APIVersion()
        lpm_entry("3").insert()
        out["after_insert"] = read_lpm()
        try:
            lpm_entry("3").insert()
            out["duplicate"] = "accepted"
        except P4RuntimeWriteException as e:
            out["duplicate"] = str(e)
        lpm_entry("4").modify()
        out["after_modify"] = read_lpm()

        packet_in = sh.PacketIn()
        sh.PacketOut(b"\x0a\x01\x02\x03payload", egress_port="5", pad="0").send()
        msgs = list(packet_in.sniff(timeout=2))
        out["packet_in"] = [json_format.MessageToDict(m.packet) for m in msgs]

        out["counters"] = [json_format.MessageToDict(c.msg()) for c in sh.CounterEntry("MyIngress.port_pkts").read()]
        out["direct"] = [json_format.MessageToDict(c.msg()) for c in sh.DirectCounterEntry("MyIngress.lpm_hits").read()]
        lpm_entry("4").delete()
        out["after_delete"] = read_lpm()
    finally:
        sh.teardown()
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])), flush=True)
