# Web search flow sizes: the background-traffic distribution measured by DCTCP (Alizadeh et al.,
# "Data Center TCP (DCTCP)", SIGCOMM 2010, which publishes it as a figure, not a table).
# Points: HPCC's tabulation (Li et al., SIGCOMM 2019; github.com/alibaba-edu/High-Precision-Congestion-
# Control, traffic_gen/WebSearch_distribution.txt: the same twelve points, fractions in percent),
# checked point by point. The ns-2 tabulation of pFabric and the simulations after it (CDF_search.tcl
# / CDF_dctcp.tcl, in 1460-byte packets: 6 at 0 and 0.15, then 13, 19, 33, 53, 133, 667, 1333, 3333,
# 6667, 20000 at the same fractions as here; mean 1141 packets, which run scripts give as 1138 x 1460
# bytes) is the same curve in packets: from 0.15 on its sizes are 3-8 % smaller up to 30 kB and 2.7 %
# from 200 kB on, and it starts at 6 packets: there the first 15 % of flows are 8760 bytes, here they
# are spread evenly over 0-10 kB (6 % of all flows below 4 kB). Mean: 1.71 MB here, 1.67 MB there.
# Flow size in bytes, cumulative fraction of flows at or below it; sizes between points are
# interpolated linearly.
0 0
10000 0.15
20000 0.20
30000 0.30
50000 0.40
80000 0.53
200000 0.60
1000000 0.70
2000000 0.80
5000000 0.90
10000000 0.97
30000000 1
