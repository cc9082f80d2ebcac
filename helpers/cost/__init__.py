"""Models of cost: a few lines of arithmetic that a notebook calibrates on this machine.

Notebook 10 onwards: Amdahl's law, the latency-bandwidth (alpha-beta) model and the
cost of a gradient exchange by parameter server or ring all-reduce
(:mod:`.communication`); the bytes each device moves in a hand-written all-reduce
(:mod:`.traffic`, notebook 11); the roofline (:mod:`.roofline`), what a model's layers
cost (:mod:`.layers`) and when a data-parallel step is communication-bound
(:mod:`.data_parallel`, notebook 12); the memory of training and ZeRO's sharding
(:mod:`.memory`) and the bubble of a pipeline (:mod:`.pipeline`, notebook 13).
"""
