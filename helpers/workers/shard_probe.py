"""Which examples does each worker get? tf.data auto-sharding under MultiWorkerMirroredStrategy.

Every worker builds the same pipeline over the text files of ``--input-dir`` (one example id
per line) and, under each ``AutoShardPolicy`` asked for, prints the ids it received, e.g.
``[worker-0] FILE: 0 1 2 3 8 9 10 11`` (notebook 06). No Keras, so it starts quickly.
"""

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from helpers.frameworks import import_tensorflow
from helpers.workers import common

POLICIES = ("AUTO", "FILE", "DATA", "OFF")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tf = import_tensorflow(keras=False)  # no Keras here: start faster
    resolver = common.cluster_resolver()
    with common.deadline_for_peers(args.connect_timeout):  # the strategy waits for every worker
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    name = f"{strategy.cluster_resolver.task_type}-{strategy.cluster_resolver.task_id}"
    files = input_files(args.input_dir)
    for policy in args.policies:
        seen = examples_seen(tf, strategy, files, policy, args.global_batch)
        print(f"[{name}] {policy}: {' '.join(map(str, seen))}", flush=True)
    return 0


def examples_seen(tf: Any, strategy: Any, files: list[str], policy: str,
                  global_batch: int) -> list[int]:
    """The example ids this worker receives, in order, from one pass over ``files``."""
    dataset = (tf.data.TextLineDataset(files)
               .map(lambda line: tf.strings.to_number(line, tf.int64))
               .batch(global_batch, drop_remainder=True))
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(
        tf.data.experimental.AutoShardPolicy, policy)
    dataset = dataset.with_options(options)
    seen: list[int] = []
    for batch in strategy.experimental_distribute_dataset(dataset):
        for local in strategy.experimental_local_results(batch):  # one per local replica
            seen.extend(int(i) for i in local.numpy())
    return seen


def input_files(folder: str) -> list[str]:
    """The ``.txt`` files of ``folder``, sorted, so every worker lists them in one order."""
    return sorted(str(f) for f in Path(folder).glob("*.txt")) if Path(folder).is_dir() else []


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input-dir", required=True,
                        help="folder of text files holding one example id per line")
    parser.add_argument("--global-batch", type=int, default=4,
                        help="examples per step over all workers")
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=["FILE", "DATA", "OFF"])
    parser.add_argument("--connect-timeout", type=float, default=120.0,
                        help="seconds to wait for every task of the cluster to connect")
    args = parser.parse_args(argv)
    common.check_flags(parser, args, ints={"global_batch": (1, 1 << 16)},
                       numbers={"connect_timeout": {"above": 0}},
                       problem=common.resolver_problem("tf_config"))
    if not input_files(args.input_dir):
        parser.error(f"--input-dir {args.input_dir} holds no .txt files: write the inputs first")
    return args


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip TensorFlow's teardown, a second or more per process for nothing
