"""Worker-side code shared by the TensorFlow timing programs (``tf_allreduce``, ``tf_step_timing``).

Those programs measure collectives under ``MultiWorkerMirroredStrategy`` and send their
numbers back the way the MXNet workers do: one ``RESULT {json}`` line per measurement on
stdout (:data:`helpers.workers.mx_worker.RESULT_PREFIX`), which the notebook reads from
the worker's log with :func:`helpers.workers.mx_worker.parse_results`. They also share
how they call the strategy's all-reduce, how they take this worker's copy of a
per-replica result, and how they end.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, NoReturn

from helpers.workers.mx_worker import RESULT_PREFIX


def report(**values: Any) -> None:
    """Print one machine-readable result line for the notebook."""
    print(RESULT_PREFIX + json.dumps(values, sort_keys=True), flush=True)


def all_reduce(tf: Any, values: Any, options: Any = None) -> Any:
    """Sum ``values`` (a tensor or a list) over all replicas, from inside ``strategy.run``.

    This is the call Keras' optimizer makes for the gradients; ``options`` are
    ``tf.distribute.experimental.CommunicationOptions`` for this call only.
    """
    context = tf.distribute.get_replica_context()
    return context.all_reduce(tf.distribute.ReduceOp.SUM, values, options=options)


def local_result(tf: Any, strategy: Any, result: Any) -> Any:
    """This worker's copy of a (nested) per-replica result of ``strategy.run``."""
    return tf.nest.map_structure(lambda r: strategy.experimental_local_results(r)[0], result)


#: The line a worker prints once its last collective is done (the launcher waits for it).
TIMING_DONE = "timing done"


def finish(name: str, linger: float = 120.0) -> NoReturn:
    """Print :data:`TIMING_DONE`, then wait to be ended by the launcher (at most ``linger`` s).

    A worker cannot know when its peers have fetched the last chunk it serves (in a ring,
    each worker pulls its last chunk from its neighbour after the neighbour has finished),
    so leaving at once could break a peer's last collective; exiting normally would wait
    in TensorFlow's shutdown barrier, seconds on a busy machine. The launcher ends every
    worker once all of them have printed :data:`TIMING_DONE` (``LocalTFCluster.stop``).
    """
    print(f"[{name}] {TIMING_DONE}", flush=True)
    sys.stderr.flush()
    time.sleep(linger)
    os._exit(0)
