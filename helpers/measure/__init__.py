"""Measuring: honest timings, which BLAS does the work, copy bandwidth, the seed's matpow.

Notebooks 03-05 and 10-13: synchronised timing with warm-up and repeats
(:mod:`.timing`), the BLAS libraries, kernels and threads behind a matrix product
(:mod:`.blas`), copy cost against size (:mod:`.bandwidth`) and the seed's matrix power
with its FLOP count and overflow arithmetic (:mod:`.matpow`).
"""
