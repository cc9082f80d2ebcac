"""Time all-reduce between worker processes under MultiWorkerMirroredStrategy: alone, and
inside a training step. Every worker runs it with the same flags (a collective waits for all
its members), one replica each, RING over gRPC; each measurement is one ``RESULT`` line.

Notebook 11: the strategy's all-reduce, its op called directly on groups of workers, and
fusion (``--tensors``). Notebook 12 (``--batches``): a step's compute, the data-parallel step,
the exchange alone, and gradient accumulation, with plain SGD written out (a Keras optimizer
would all-reduce the gradients again).
"""

import argparse
import math
import os
import statistics
import sys
import time
from typing import Any, NoReturn

from helpers.costs import layer_costs
from helpers.frameworks import import_tensorflow
from helpers.training import build_model, training_arrays
from helpers.workers import common
from helpers.workers.common import TIMING_DONE, report
from helpers.workers.mwms_train import make_strategy

#: Group and instance keys of the collectives called directly. MultiWorkerMirroredStrategy
#: numbers its own groups from 1 up; these start far above, so the two never meet.
GROUP_KEY_BASE = 100_000
INSTANCE_KEY_BASE = 1_000_000


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tf = import_tensorflow(keras=bool(args.batches))  # Keras for the model of notebook 12
    strategy, implementation = make_strategy(tf, common.cluster_resolver(), args.timeout, "ring")
    rank, workers = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
    print(f"[worker-{rank}] {workers} workers, collective {implementation}", flush=True)
    (time_steps if args.batches else time_all_reduce)(tf, strategy, args)
    return finish(f"worker-{rank}")


def time_all_reduce(tf: Any, strategy: Any, args: argparse.Namespace) -> None:
    rank, workers = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
    if max(args.groups) > workers:
        raise SystemExit(f"--groups {args.groups} larger than the {workers} workers")
    keys = iter(range(INSTANCE_KEY_BASE, INSTANCE_KEY_BASE + 1_000_000))
    strategy_all_reduce = all_reduce_one(tf, strategy)

    def barrier() -> None:  # an all-reduce over everyone: nobody leaves before all arrive
        fetched(strategy_all_reduce([tf.ones([1])]))

    # The op itself, on a group of the first `size` workers.
    def direct_all_reduce(size: int, elements: int, instance_key: int) -> Any:
        group_key = GROUP_KEY_BASE + size

        @tf.function(input_signature=[tf.TensorSpec([elements], tf.float32)])
        def reduce(x: Any) -> Any:
            return tf.raw_ops.CollectiveReduceV2(
                input=x, group_size=size, group_key=group_key, instance_key=instance_key,
                ordering_token=[], merge_op="Add", final_op="Id",
                communication_hint="ring", timeout_seconds=args.timeout)[0]

        return reduce

    xs = {kb: tf.fill([kb * 256], float(rank + 1)) for kb in args.sizes_kb}  # sums: g (g + 1) / 2
    x = xs[max(args.sizes_kb)]  # the strategy's door to the same op, at one size
    total = fetched(strategy_all_reduce([x]))
    report(rank=rank, kind="strategy", workers=workers, bytes=4 * int(x.shape[0]),
           correct=total == workers * (workers + 1) / 2,
           ops=collective_ops(strategy_all_reduce, [x]), **timed(args, strategy_all_reduce, [x]))
    ops = {(kb, g): direct_all_reduce(g, kb * 256, next(keys))  # keys taken by every worker
           for kb in args.sizes_kb for g in args.groups}
    samples = in_turns(args, {(kb, g): (op if rank < g else lambda x: x[0], xs[kb])  # members only
                              for (kb, g), op in ops.items()}, args.repeat, before=barrier)
    for (kb, g), times in samples.items():
        if rank < g:  # the timed turns, and the sum
            report(rank=rank, kind="op", workers=g, bytes=kb * 1024, **spread(times),
                   correct=fetched(ops[kb, g](xs[kb])) == g * (g + 1) / 2)
    if not args.tensors:
        return

    n = args.tensor_kb * 256  # fusion: K small tensors as K collectives, in one pack, by hand
    small = [tf.fill([n], float(rank + 1)) for _ in range(args.tensors)]

    def each(options: Any) -> Any:  # the tensors as they are, packed as `options` say
        return lambda *v: all_reduce(tf, [tf.identity(t) for t in v], options)

    Options = tf.distribute.experimental.CommunicationOptions
    ways = {label: summed(tf, strategy, replica) for label, replica in (
        ("one collective per tensor", each(Options(bytes_per_pack=1))),
        ("one pack (bytes_per_pack=0)", each(Options(bytes_per_pack=0))),
        ("packed by hand", lambda *v: tf.split(all_reduce(tf, tf.concat(v, axis=0)), len(v))))}
    barrier()
    turns = in_turns(args, {label: (fn, small) for label, fn in ways.items()}, min(args.repeat, 3))
    for label, fn in ways.items():  # in turns, as above; slow: a few runs do
        report(rank=rank, kind="fusion", way=label, tensors=args.tensors,
               bytes=4 * n * args.tensors, workers=workers,
               collectives=len(collective_ops(fn, small)),
               correct=fetched(fn(small)) == workers * (workers + 1) / 2,
               **spread(turns[label]))


def time_steps(tf: Any, strategy: Any, args: argparse.Namespace) -> None:
    import keras  # loaded by import_tensorflow above

    rank, workers = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
    Options = tf.distribute.experimental.CommunicationOptions
    k = args.micro_batches
    x_all, y_all, source = training_arrays(max(args.batches) * k, seed=rank)
    with strategy.scope():
        model = build_model(x_all.shape[1:])
    alone = build_model(x_all.shape[1:])  # the same model outside the strategy
    variables, alone_variables = model.trainable_variables, alone.trainable_variables
    grad_bytes = sum(4 * math.prod(v.shape) for v in variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    lr = args.learning_rate

    def gradients(net: Any, x: Any, y: Any, global_batch: Any) -> list[Any]:
        with tf.GradientTape() as tape:
            per_example = loss_fn(y, net(x, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        return tape.gradient(loss, net.trainable_variables)

    def update(params: list[Any], grads: list[Any]) -> None:
        for v, g in zip(params, grads, strict=True):
            v.assign_sub(lr * g)

    def local(result: Any) -> Any:  # this worker's copy of a per-replica result
        return local_result(tf, strategy, result)

    spec = [tf.TensorSpec([None, *x_all.shape[1:]], tf.float32), tf.TensorSpec([None], tf.int32)]

    @tf.function(input_signature=spec)
    def compute_step(x: Any, y: Any) -> Any:
        grads = gradients(alone, x, y, tf.shape(x)[0] * workers)
        update(alone_variables, grads)
        return grads[-1][0]

    def data_parallel_step(options: Any) -> Any:
        @tf.function(input_signature=spec)
        def step(x: Any, y: Any) -> Any:
            def replica(x: Any, y: Any) -> Any:
                grads = all_reduce(tf, gradients(model, x, y, tf.shape(x)[0] * workers), options)
                update(variables, grads)
                return grads[-1][0]
            return local(strategy.run(replica, args=(x, y)))
        return step

    exchange = summed(tf, strategy, lambda *v: all_reduce(tf, [tf.identity(t) for t in v]))

    micro = [tf.TensorSpec([k, None, *x_all.shape[1:]], tf.float32),
             tf.TensorSpec([k, None], tf.int32)]

    @tf.function(input_signature=micro)
    def accumulate_step(xs: Any, ys: Any) -> Any:
        def replica(xs: Any, ys: Any) -> Any:
            global_batch = tf.shape(xs)[1] * k * workers
            total = gradients(model, xs[0], ys[0], global_batch)
            for i in range(1, k):  # added locally: no exchange
                total = [a + g for a, g in
                         zip(total, gradients(model, xs[i], ys[i], global_batch),
                             strict=True)]
            grads = all_reduce(tf, total)  # one exchange for k micro-batches
            update(variables, grads)
            return grads[-1][0]
        return local(strategy.run(replica, args=(xs, ys)))

    def side_by_side(**calls: tuple[Any, ...]) -> dict[str, float]:  # medians, timed in turns
        return {n: statistics.median(t) for n, t in in_turns(args, calls, args.repeat).items()}

    costs = layer_costs(model)
    report(rank=rank, kind="model", workers=workers, params=int(grad_bytes // 4), data=source,
           grad_bytes=int(grad_bytes), tensors=len(variables), input_shape=list(x_all.shape[1:]),
           activations_per_example=sum(c.outputs for c in costs))
    one = all_reduce_one(tf, strategy)
    for kb in args.sizes_kb:
        report(rank=rank, kind="all-reduce", bytes=kb * 1024,
               **timed(args, one, [tf.ones([kb * 256])]))
    report(rank=rank, kind="exchange", bytes=int(grad_bytes),
           **timed(args, exchange, [tf.ones(v.shape) for v in variables]))
    one_pack = data_parallel_step(Options(bytes_per_pack=0))
    pack_bytes = max(1, int(grad_bytes) // args.packs)
    packed = data_parallel_step(Options(bytes_per_pack=pack_bytes))
    for b in args.batches:
        x, y = tf.constant(x_all[:b]), tf.constant(y_all[:b])
        report(rank=rank, kind="batch", batch=b, pack_bytes=pack_bytes, **side_by_side(
            compute=(compute_step, x, y), step=(one_pack, x, y), step_packed=(packed, x, y)))
    b = min(args.batches)
    xs = tf.constant(x_all[:k * b].reshape(k, b, *x_all.shape[1:]))
    ys = tf.constant(y_all[:k * b].reshape(k, b))

    def k_steps() -> Any:  # k data-parallel steps, one after another: the last one's result
        return [one_pack(xs[i], ys[i]) for i in range(k)][-1]

    report(rank=rank, kind="accumulation", micro_batch=b, micro_batches=k, **side_by_side(
        accumulated=(accumulate_step, xs, ys), separate=(k_steps,)))


def all_reduce(tf: Any, values: Any, options: Any = None) -> Any:
    """Sum ``values`` over all replicas inside ``strategy.run``: Keras' optimizer's call."""
    context = tf.distribute.get_replica_context()
    return context.all_reduce(tf.distribute.ReduceOp.SUM, values, options=options)


def local_result(tf: Any, strategy: Any, result: Any) -> Any:
    """This worker's copy of a (nested) per-replica result of ``strategy.run``."""
    return tf.nest.map_structure(lambda r: strategy.experimental_local_results(r)[0], result)


def summed(tf: Any, strategy: Any, replica: Any) -> Any:
    """A tf.function of tensors: ``replica(*tensors)``, this worker's last result's first value."""
    return tf.function(lambda values: local_result(
        tf, strategy, strategy.run(replica, args=tuple(values)))[-1][0])


def all_reduce_one(tf: Any, strategy: Any) -> Any:
    """The strategy's all-reduce of one tensor, passed in a list, over every worker."""
    return summed(tf, strategy, lambda v: [all_reduce(tf, tf.identity(v))])


def fetched(result: Any) -> float:
    """The timed calls return one element: fetching it waits for the collective."""
    return float(result.numpy())


def in_turns(args: argparse.Namespace, calls: dict[Any, tuple[Any, ...]], repeat: int,
             before: Any = lambda: None) -> dict[Any, list[float]]:
    """Seconds of each run of every ``(function, *inputs)``, one run of each per turn after
    ``args.warmup`` untimed turns (``before`` each run): load then slows them all alike."""
    samples: dict[Any, list[float]] = {name: [] for name in calls}
    for turn in range(args.warmup + repeat):
        for name, (fn, *inputs) in calls.items():
            before()
            start = time.perf_counter()
            fetched(fn(*inputs))
            if turn >= args.warmup:
                samples[name].append(time.perf_counter() - start)
    return samples


def timed(args: argparse.Namespace, fn: Any, *inputs: Any) -> dict[str, float]:
    return spread(in_turns(args, {"": (fn, *inputs)}, args.repeat)[""])


def spread(samples: list[float]) -> dict[str, float]:
    """Median, fastest and slowest seconds: a burst of load can only slow a run down."""
    return {"seconds": statistics.median(samples), "best": min(samples), "worst": max(samples)}


def finish(name: str, linger: float = 120.0) -> NoReturn:
    """Say :data:`~helpers.workers.common.TIMING_DONE`, then wait (``linger`` s at most) to be
    ended: leaving could break a peer still fetching a chunk this worker serves, and a normal
    exit waits in TensorFlow's shutdown barrier."""
    print(f"[{name}] {TIMING_DONE}", flush=True)
    sys.stderr.flush()
    time.sleep(linger)
    os._exit(0)


def collective_ops(tf_function: Any, *args: Any) -> list[dict[str, Any]]:
    """The collective ops in the graph ``tf_function`` traces for ``args``, with their hint."""
    ops = tf_function.get_concrete_function(*args).graph.get_operations()
    hints = [(op.type, op.get_attr("communication_hint")) for op in ops
             if op.type.startswith("Collective")]
    return [{"type": t, "hint": h.decode() if isinstance(h, bytes) else str(h)} for t, h in hints]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-kb", type=int, nargs="+", default=[4, 64, 1024],
                        help="message sizes (KiB of float32) per worker")
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 2], help="op's group sizes")
    parser.add_argument("--tensors", type=int, default=0, help="fusion: small tensors (0: skip)")
    parser.add_argument("--tensor-kb", type=int, default=4, help="fusion: KiB per small tensor")
    parser.add_argument("--batches", type=int, nargs="*", default=[], help="12: step batches")
    parser.add_argument("--micro-batches", type=int, default=4, help="accumulated per exchange")
    parser.add_argument("--packs", type=int, default=4, help="overlap: packs of gradients")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a collective may wait for its peers")
    args = parser.parse_args(argv)
    common.check_flags(parser, args, ints={
        "sizes_kb": (1, 1 << 20), "groups": (1, 64), "tensors": (0, 10_000),
        "tensor_kb": (1, 1 << 20), "batches": (1, 1 << 16), "micro_batches": (1, 1024),
        "packs": (1, 1 << 16), "repeat": (1, 10_000), "warmup": (0, 10_000)},
        numbers={"learning_rate": {"above": 0}, "timeout": {"above": 0}},
        problem=common.resolver_problem("tf_config"))
    return args


if __name__ == "__main__":
    sys.exit(main())
