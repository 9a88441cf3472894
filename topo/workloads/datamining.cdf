# Data mining flow sizes: the distribution measured by VL2 (Greenberg et al., "VL2: A Scalable and
# Flexible Data Center Network", SIGCOMM 2009, which publishes it as a figure), as tabulated for
# fabric simulations by pFabric and PIAS (ns-2 CDF_vl2.tcl, in 1460-byte packets: 1 at 0 and 0.5,
# then 2, 3, 7, 267, 2107, 66667, 666667 at 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1). Checked against two
# public reproductions: its mean, 5116.6 packets, is the meanFlowSize 5117 x 1460 of PIAS's
# scripts/run_pias_vl2.py (github.com/HKUST-SING/PIAS-NS2), and ns3-ecn-sharp's
# src/hula/examples/cdf_vl2_datamining.txt (100 equiprobable sizes) holds the midpoints of these
# segments, rounded down (1, 2, 5, 137, 1187, 34387, 366667), in their proportions. Points written here in bytes
# (packets x 1460), cumulative fraction of flows.
1460 0
1460 0.5
2920 0.6
4380 0.7
10220 0.8
389820 0.9
3076220 0.95
97333820 0.99
973333820 1
