"""Time all-reduce between worker processes, with the collective MultiWorkerMirroredStrategy runs.

Every worker of a local TensorFlow cluster runs this program; ``TF_CONFIG`` tells it
its place. It builds ``MultiWorkerMirroredStrategy`` with RING all-reduce (gRPC between
the processes) and then:

1. at the largest message size, times the strategy's own all-reduce over all workers
   (``ReplicaContext.all_reduce`` inside a ``tf.function``, the call Keras' optimizer
   makes for gradients) and checks the sum, reading from the traced graph which op did
   the work;
2. at every message size, times that op, ``CollectiveReduceV2`` with
   ``communication_hint="ring"``, called directly on groups made of the first 1, 2, ...
   workers. A collective involves only
   the members of its group, so one cluster of four processes measures all-reduce
   among 1, 2 and 4 of them while the others wait: four processes started once instead
   of seven started three times. A group of one exchanges nothing; its time is what the
   op costs by itself;
3. with ``--tensors K``, all-reduces K small tensors three ways: as K collectives
   (``CommunicationOptions(bytes_per_pack=1)``: every tensor its own pack), as one pack
   (``bytes_per_pack=0``, the default: TensorFlow concatenates them, reduces once and
   splits), and packed by hand (concatenate, one all-reduce of a single tensor, split).

Each worker prints one ``RESULT {json}`` line per measurement
(:func:`helpers.workers.mx_worker.parse_results` reads them back). All workers must run
the same arguments: every collective waits for all members of its group.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from helpers.frameworks import import_tensorflow
from helpers.measure import benchmark
from helpers.workers.common import all_reduce, cluster_resolver, finish, local_result, report
from helpers.workers.mwms_train import make_strategy

#: Group and instance keys of the collectives called directly. MultiWorkerMirroredStrategy
#: numbers its own groups from 1 up; these start far above, so the two never meet.
GROUP_KEY_BASE = 100_000
INSTANCE_KEY_BASE = 1_000_000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-kb", type=int, nargs="+", default=[4, 64, 1024],
                        help="message sizes (KiB of float32) per worker")
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 2],
                        help="sizes of the groups of workers timed with the op itself")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--tensors", type=int, default=0,
                        help="fusion: how many small tensors to all-reduce (0: skip)")
    parser.add_argument("--tensor-kb", type=int, default=4, help="fusion: KiB per small tensor")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a collective may wait for its peers")
    args = parser.parse_args(argv)
    if min(args.sizes_kb) < 1 or min(args.groups) < 1 or args.repeat < 1 or args.warmup < 0 \
            or args.tensors < 0 or args.tensor_kb < 1:
        parser.error("sizes, groups, --repeat and --tensor-kb must be >= 1, --warmup and "
                     "--tensors >= 0")
    return args


def collective_ops(tf_function: Any, *args: Any) -> list[dict[str, Any]]:
    """The collective ops in the graph ``tf_function`` traces for ``args``, with their hint."""
    graph = tf_function.get_concrete_function(*args).graph
    found = []
    for op in graph.get_operations():
        if op.type.startswith("Collective"):
            hint = op.get_attr("communication_hint")
            found.append({"type": op.type, "hint": hint.decode() if isinstance(hint, bytes)
                          else str(hint)})
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tf = import_tensorflow(keras=False)
    resolver = cluster_resolver("tf_config")
    strategy, implementation = make_strategy(tf, resolver, args.timeout, "ring")
    rank, workers = resolver.task_id, strategy.num_replicas_in_sync
    too_big = [g for g in args.groups if g > workers]
    if too_big:
        raise SystemExit(f"--groups {too_big} larger than the {workers} workers of the cluster")
    keys = iter(range(INSTANCE_KEY_BASE, INSTANCE_KEY_BASE + 1_000_000))

    def first(result: Any) -> float:  # the timed call returns one element: fetching it waits
        return float(result.numpy())

    def timed(fn: Any, x: Any) -> dict[str, float]:
        result = benchmark(lambda: fn(x), sync=first, warmup=args.warmup, repeat=args.repeat)
        return {"seconds": result.median, "best": result.best}

    # 1. The strategy's all-reduce over every worker (each worker: one replica).
    @tf.function
    def strategy_all_reduce(x: Any) -> Any:
        result = strategy.run(lambda v: all_reduce(tf, tf.identity(v)), args=(x,))
        return local_result(tf, strategy, result)[0]

    barrier_value = tf.ones([1])

    def barrier() -> None:  # an all-reduce over everyone: nobody leaves before all arrive
        strategy_all_reduce(barrier_value).numpy()

    # 2. The op itself, on a group of the first `size` workers.
    def direct_all_reduce(size: int, elements: int, instance_key: int) -> Any:
        group_key = GROUP_KEY_BASE + size

        @tf.function(input_signature=[tf.TensorSpec([elements], tf.float32)])
        def reduce(x: Any) -> Any:
            return tf.raw_ops.CollectiveReduceV2(
                input=x, group_size=size, group_key=group_key, instance_key=instance_key,
                ordering_token=[], merge_op="Add", final_op="Id",
                communication_hint="ring", timeout_seconds=args.timeout)[0]

        return reduce

    print(f"[worker-{rank}] {workers} workers, collective {implementation}", flush=True)
    for kb in args.sizes_kb:
        elements = kb * 256
        x = tf.fill([elements], float(rank + 1))  # the sum over g workers is g (g + 1) / 2
        if kb == max(args.sizes_kb):  # the strategy's door to the same op, at one size
            total = first(strategy_all_reduce(x))
            report(rank=rank, kind="strategy", workers=workers, bytes=4 * elements,
                   correct=total == workers * (workers + 1) / 2,
                   ops=collective_ops(strategy_all_reduce, x), **timed(strategy_all_reduce, x))
        for size in args.groups:
            instance_key = next(keys)  # taken by every worker, so members agree on it
            barrier()
            if rank < size:
                reduce = direct_all_reduce(size, elements, instance_key)
                total = first(reduce(x))
                report(rank=rank, kind="op", workers=size, bytes=4 * elements,
                       correct=total == size * (size + 1) / 2, **timed(reduce, x))
            barrier()

    if args.tensors:
        n = args.tensor_kb * 256
        small = [tf.fill([n], float(rank + 1)) for _ in range(args.tensors)]

        def per_replica(options: Any) -> Any:
            @tf.function
            def reduce(values: Any) -> Any:
                result = strategy.run(
                    lambda *v: all_reduce(tf, [tf.identity(t) for t in v], options),
                    args=tuple(values))
                return local_result(tf, strategy, result)[-1][0]
            return reduce

        @tf.function
        def by_hand(values: Any) -> Any:
            def step(*v: Any) -> Any:
                packed = all_reduce(tf, tf.concat(v, axis=0))
                return tf.split(packed, len(v))
            return local_result(tf, strategy, strategy.run(step, args=tuple(values)))[-1][0]

        Options = tf.distribute.experimental.CommunicationOptions
        ways = {"one collective per tensor": per_replica(Options(bytes_per_pack=1)),
                "one pack (bytes_per_pack=0)": per_replica(Options(bytes_per_pack=0)),
                "packed by hand": by_hand}
        repeat = min(args.repeat, 3)  # one collective per tensor is slow: a few runs suffice
        for label, fn in ways.items():
            barrier()
            total = first(fn(small))
            result = benchmark(lambda fn=fn: fn(small), sync=first, warmup=args.warmup,
                               repeat=repeat)
            report(rank=rank, kind="fusion", way=label, tensors=args.tensors,
                   bytes=4 * n * args.tensors, workers=workers,
                   collectives=len(collective_ops(fn, small)), seconds=result.median,
                   best=result.best, correct=total == workers * (workers + 1) / 2)
    return finish(f"worker-{rank}")


if __name__ == "__main__":
    sys.exit(main())
