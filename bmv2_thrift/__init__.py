"""BMv2 Thrift calls that the pinned ``sswitch_runtime`` package lacks (docs/bmv2.md)."""
