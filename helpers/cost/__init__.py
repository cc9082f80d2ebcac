"""Models of cost: a few lines of arithmetic that a notebook calibrates on this machine.

Notebook 10 onwards: Amdahl's law, the latency-bandwidth (alpha-beta) model and the
cost of a gradient exchange by parameter server or ring all-reduce
(:mod:`.communication`).
"""
