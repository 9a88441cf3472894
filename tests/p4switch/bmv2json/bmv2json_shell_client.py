"""p4runtime-shell with ``config=(p4info, json)`` against p4switch; run as a subprocess.

Usage: python -m tests.p4switch.bmv2json.bmv2json_shell_client ADDR P4INFO_TXT BMV2_JSON
Prints one JSON object: the entry it read back after inserting one.
"""

from __future__ import annotations

import json
import sys

from google.protobuf import json_format
from p4runtime_sh import shell as sh


def main(addr: str, p4info: str, device_config: str) -> dict:
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(p4info, device_config),
             verbose=False)
    try:
        te = sh.TableEntry("RouterIngress.ipv4_lpm")(action="RouterIngress.set_nhop")
        te.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
        te.action["dstAddr"] = "02:00:00:00:00:02"
        te.action["port"] = "2"
        te.insert()
        return {"entries": [json_format.MessageToDict(e.msg()) for e in sh.TableEntry("RouterIngress.ipv4_lpm").read()]}
    finally:
        sh.teardown()


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
