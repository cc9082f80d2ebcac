"""Measuring: honest timings, which BLAS does the work, copy bandwidth, the seed's matpow.

Notebooks 03-05 and 10-13: synchronised timing with warm-up and repeats
(:mod:`.timing`), the BLAS libraries, kernels and threads behind a matrix product
(:mod:`.blas`), copy cost against size (:mod:`.bandwidth`), the seed's matrix power
with its FLOP count and overflow arithmetic (:mod:`.matpow`), collective timings read
back from worker processes (:mod:`.collectives`), a process's memory growth
(:mod:`.memory`) and a pipeline run with its timeline (:mod:`.pipeline`).
"""
