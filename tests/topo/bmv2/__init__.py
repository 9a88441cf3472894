"""BMv2 as the switch: the BMv2-vs-p4switch differential (topo/experiments/bmv2_diff.py), BMv2's egress
paced at an emulated link's rate, issue 20's stall on BMv2's egress queues, and a simple_switch_grpc
without Thrift; most checks need no BMv2.
"""
