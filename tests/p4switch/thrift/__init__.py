"""simple_switch's Thrift interface on p4switch (p4switch/thrift_*.py): the stock simple_switch_CLI's
table, action-profile, counter, meter and register commands, the traffic manager's per-priority queues,
and a commands file run against the real BMv2 and p4switch line for line (cli_switches.py starts either;
the files are in tests/p4switch/cli_commands/).
"""
