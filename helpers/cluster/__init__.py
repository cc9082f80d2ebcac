"""Clusters of real processes on this machine: start them, watch them, always end them.

Notebooks 06-11: process groups with free ports, readiness checks, logs and clean-up
(:mod:`.processes`), hosts, ports and who listens on them (:mod:`.ports`), who else
could reach those ports and when to refuse to start (:mod:`.exposure`), what every
cluster offers (:mod:`.base`), TensorFlow clusters described by ``TF_CONFIG``
(:mod:`.tf_cluster`) and MXNet ps-lite clusters (:mod:`.mx_cluster`). The programs the
processes run live in :mod:`helpers.workers`.
"""
