"""A Mininet script as a P4 lab writes it, with p4switch.mininet.P4Switch for simple_switch_grpc.

Run by tests/p4switch/test_mininet.py with Debian's python3 (which has Mininet), as root:
    python3 tests/p4switch/mininet_script.py JSON SW_PATH CLI_PATH
Prints one JSON object: the ping result and the switch's command line.
"""

from __future__ import annotations

import json
import subprocess
import sys

from mininet.net import Mininet
from mininet.topo import Topo

from p4switch.mininet import P4Switch


class Line(Topo):
    def build(self) -> None:
        s1 = self.addSwitch("s1", json_path=sys.argv[1], sw_path=sys.argv[2], thrift_port=9590, grpc_port=50590)
        for i in (1, 2):
            h = self.addHost(f"h{i}", ip=f"10.0.0.{i}/24", mac=f"02:00:00:00:00:0{i}")
            self.addLink(h, s1, port2=i)


def main() -> dict:
    net = Mininet(topo=Line(), switch=P4Switch, controller=None, autoSetMacs=False)
    net.start()
    try:
        h1, h2 = net.get("h1", "h2")
        h1.setARP("10.0.0.2", "02:00:00:00:00:02")
        h2.setARP("10.0.0.1", "02:00:00:00:00:01")
        commands = ("table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 10.0.0.1/32 => 02:00:00:00:00:01 1\n"
                    "table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 10.0.0.2/32 => 02:00:00:00:00:02 2\n")
        cli = subprocess.run([sys.argv[3], "--thrift-port", "9590"], input=commands, capture_output=True, text=True,
                             timeout=60)
        ping = h1.cmd("ping -c 3 -W 2 10.0.0.2")
        return {"cli": cli.stdout, "ping": ping, "command": net.get("s1").command()}
    finally:
        net.stop()


if __name__ == "__main__":
    print(json.dumps(main()))
