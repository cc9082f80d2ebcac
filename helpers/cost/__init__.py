"""Models of cost: a few lines of arithmetic that a notebook calibrates on this machine.

The formulas are written in the notebooks that teach them (10-13); what later notebooks
reuse lives here: the latency-bandwidth (alpha-beta) model and the two gradient
exchanges (:mod:`.communication`, derived in notebook 10), the byte counter of a
hand-written all-reduce (:mod:`.traffic`, notebook 11), what a model's layers cost
(:mod:`.layers`) and the memory of training (:mod:`.memory`, notebook 13).
"""
