"""Time one data-parallel training step, and its parts, on every worker of a MWMS cluster.

Every worker of a local TensorFlow cluster runs this program (``TF_CONFIG``); each is
one replica of ``MultiWorkerMirroredStrategy`` training the series' model
(:func:`helpers.training.build_model`). For every per-replica batch size it times, in
alternating rounds:

* **compute**: forward, backward and the update of a copy of the model outside the
  strategy, so nothing is exchanged;
* **step**: the same on the strategy's model, with the gradients all-reduced between
  the workers (one pack, as Keras' optimizer does it) before the update;
* **step, several packs**: the same with ``CommunicationOptions(bytes_per_pack=...)``
  cutting the gradients into packs, so the exchange of the last layers' gradients can
  start while the backward pass still computes the first ones (overlap).

Once, independent of the batch: **exchange**, the all-reduce of a gradient-shaped list
alone, and single all-reduces of ``--sizes-kb`` for a latency-bandwidth fit. And for
gradient accumulation at the smallest batch: ``--micro-batches`` K micro-batches whose
gradients are added locally and all-reduced once, against K ordinary steps.

The update is plain SGD written out (``v.assign_sub(lr * g)``) rather than a Keras
optimizer, which would all-reduce the gradients again by itself. Each worker prints
``RESULT {json}`` lines (read back with :func:`helpers.workers.mx_worker.parse_results`).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from typing import Any

from helpers.costs import layer_costs, training_flops_per_example
from helpers.frameworks import import_tensorflow
from helpers.measure import benchmark
from helpers.training import build_model, training_arrays
from helpers.workers.common import all_reduce, cluster_resolver, finish, local_result, report
from helpers.workers.mwms_train import make_strategy


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 64, 512],
                        help="per-replica batch sizes")
    parser.add_argument("--sizes-kb", type=int, nargs="+", default=[4, 64, 1024],
                        help="all-reduce sizes for the latency-bandwidth fit")
    parser.add_argument("--micro-batches", type=int, default=4,
                        help="gradient accumulation: micro-batches per exchange")
    parser.add_argument("--packs", type=int, default=4,
                        help="overlap: packs the gradients are cut into")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    if min(args.batches) < 1 or min(args.sizes_kb) < 1 or args.micro_batches < 1 \
            or args.packs < 1 or args.repeat < 1 or args.warmup < 0:
        parser.error("batches, sizes, --micro-batches, --packs and --repeat must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tf = import_tensorflow()
    import keras  # noqa: PLC0415

    strategy, _ = make_strategy(tf, cluster_resolver("tf_config"), args.timeout, "ring")
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

    gradient_like = [tf.ones(v.shape) for v in variables]

    @tf.function
    def exchange(values: Any) -> Any:
        return local(strategy.run(lambda *v: all_reduce(tf, [tf.identity(t) for t in v]),
                                  args=tuple(values)))[-1][0]

    @tf.function
    def all_reduce_one(x: Any) -> Any:
        return local(strategy.run(lambda v: all_reduce(tf, tf.identity(v)), args=(x,)))[0]

    def accumulate_step() -> Any:
        micro = [tf.TensorSpec([k, None, *x_all.shape[1:]], tf.float32),
                 tf.TensorSpec([k, None], tf.int32)]

        @tf.function(input_signature=micro)
        def step(xs: Any, ys: Any) -> Any:
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
        return step

    def fetched(result: Any) -> float:
        return float(result.numpy())

    def seconds(fn: Any, *inputs: Any) -> float:
        return benchmark(lambda: fn(*inputs), sync=fetched, warmup=args.warmup,
                         repeat=args.repeat).median

    def side_by_side(**calls: tuple[Any, ...]) -> dict[str, float]:
        """Median seconds of each ``(function, *inputs)``, timed in alternating rounds: a
        burst of load from other programs then slows every call of the round, not one."""
        samples: dict[str, list[float]] = {name: [] for name in calls}
        for round_ in range(args.warmup + args.repeat):
            for name, (fn, *inputs) in calls.items():
                start = time.perf_counter()
                fetched(fn(*inputs))
                if round_ >= args.warmup:
                    samples[name].append(time.perf_counter() - start)
        return {name: statistics.median(values) for name, values in samples.items()}

    costs = layer_costs(model)
    report(rank=rank, kind="model", workers=workers, params=int(grad_bytes // 4),
           grad_bytes=int(grad_bytes), tensors=len(variables), data=source,
           input_shape=list(x_all.shape[1:]),
           flops_per_example=training_flops_per_example(costs),
           activations_per_example=sum(c.outputs for c in costs))
    for kb in args.sizes_kb:
        x = tf.ones([kb * 256])
        report(rank=rank, kind="all-reduce", bytes=kb * 1024, seconds=seconds(all_reduce_one, x))
    report(rank=rank, kind="exchange", bytes=int(grad_bytes), seconds=seconds(exchange,
                                                                              gradient_like))
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

    def k_steps() -> Any:
        result = None
        for i in range(k):
            result = one_pack(xs[i], ys[i])
        return result

    accumulate = accumulate_step()
    report(rank=rank, kind="accumulation", micro_batch=b, micro_batches=k, **side_by_side(
        accumulated=(accumulate, xs, ys), separate=(k_steps,)))
    return finish(f"worker-{rank}")


if __name__ == "__main__":
    sys.exit(main())
