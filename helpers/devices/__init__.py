"""Devices and placement: what this machine has, how to name it, where an op ran.

Notebooks 01-05: device strings (:mod:`.names`), listing devices (:mod:`.inventory`),
making logical CPUs and virtual GPUs and the banner that says so (:mod:`.logical`),
reading TensorFlow's placement log (:mod:`.placement`), MXNet context pairs
(:mod:`.mxnet_contexts`) and one-process ``tf.distribute`` strategies
(:mod:`.strategies`).
"""
