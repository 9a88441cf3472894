# Data mining flow sizes: the distribution measured by VL2 (Greenberg et al., "VL2: A Scalable and
# Flexible Data Center Network", SIGCOMM 2009), as commonly tabulated for fabric simulations (the
# pFabric / PIAS / CONGA ns-2 CDF, given there in 1460-byte packets: 1, 1, 2, 3, 7, 267, 2107,
# 66667, 666667). Points written here in bytes (packets x 1460), cumulative fraction of flows.
1460 0
1460 0.5
2920 0.6
4380 0.7
10220 0.8
389820 0.9
3076220 0.95
97333820 0.99
973333820 1
