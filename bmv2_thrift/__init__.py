"""BMv2 Thrift calls that the pinned ``sswitch_runtime`` package lacks (docs/howto/bmv2.md)."""
