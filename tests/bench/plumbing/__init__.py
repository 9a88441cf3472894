"""The bench's plumbing, checked without measuring anything (the figures belong to ``make bench``): the
page's partial runs, baseline commits' trees and the scripts run inside them, the throughput rounds'
receiver, the Write benchmark's servers, the netns rate sweep's pieces, the soak's leak verdict, the
wake-up round trip and the analysis-cost cases.
"""
