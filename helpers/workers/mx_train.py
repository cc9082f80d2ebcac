"""Data-parallel training of a small Gluon network over MXNet's distributed kvstore.

Every worker trains the same network with ``gluon.Trainer(..., kvstore=kv)`` on its slice
``batch[rank::num_workers]`` of each global batch, under ``dist_sync`` (one SGD step per
global batch on the servers) or ``dist_async`` (each gradient applied as it arrives). A
step is timed as compute (plus ``--slow-ms`` of sleep on ``--slow-rank``, a slower device)
and communication (``trainer.step``: push, update, pull); the other flags are the
measurements notebooks 09 and 10 read (``--help``).
"""

import argparse
import os
import statistics
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from helpers.frameworks import import_mxnet
from helpers.measure import benchmark_in_turns
from helpers.training import load_digits, weights_checksum
from helpers.workers.common import check_flags
from helpers.workers.mx_worker import connect, dmlc_env_problem, report, say, time_push_pull


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    mx = import_mxnet()
    kv = connect(args.kvstore)
    rank, n = kv.rank, kv.num_workers
    gpus = mx.context.num_gpus()  # one GPU per worker when there are GPUs, else the CPU
    ctx = mx.gpu(rank % gpus) if gpus else mx.cpu()
    digits = load_digits()
    x, x_test = (a.reshape(len(a), -1) for a in (digits.x_train, digits.x_test))
    y = digits.y_train.astype(np.float32)

    mx.random.seed(args.seed)
    net = mx.gluon.nn.Sequential()
    net.add(*[mx.gluon.nn.Dense(args.hidden, activation="relu") for _ in range(2)],
            mx.gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    net(mx.nd.array(x[:1], ctx=ctx))  # materialise the parameters
    # The Trainer pushes and pulls each parameter array under its own key: one message
    # each way per array and step, so the arrays' count matters as much as their bytes.
    params = list(net.collect_params().values())
    param_bytes = sum(int(np.prod(p.shape)) * 4 for p in params)
    say(kv, f"{ctx}, {n} worker(s), {param_bytes} bytes of parameters in {len(params)} arrays")

    compute_samples = time_compute_samples(mx, net, loss_fn, x, y, args.compute_batches, ctx)
    trainer = mx.gluon.Trainer(params, "sgd", {"learning_rate": args.lr}, kvstore=kv)

    order = np.random.default_rng(args.seed).permutation(len(x))
    sync = args.kvstore == "dist_sync"
    local_batch = len(range(rank, args.global_batch, n))
    compute_s, comm_s, losses, step_digests = [], [], [], []
    saved: dict[str, Any] = {}  # --save-weights: snapshots, outside the timed regions
    loop_start = time.perf_counter()
    for step in range(args.steps):
        if step == args.warmup_steps:
            loop_start = time.perf_counter()
        mine = order[(step * args.global_batch + np.arange(args.global_batch)) % len(x)][rank::n]
        if args.save_weights and step in (0, args.steps - 1):
            saved["initial" if step == 0 else "before_last"] = flat_weights(params, ctx)
        data, label = mx.nd.array(x[mine], ctx=ctx), mx.nd.array(y[mine], ctx=ctx)
        t0 = time.perf_counter()
        with mx.autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        mx.nd.waitall()
        if rank == args.slow_rank:
            time.sleep(args.slow_ms / 1e3)
        t1 = time.perf_counter()
        trainer.step(args.global_batch if sync else local_batch)
        mx.nd.waitall()
        t2 = time.perf_counter()
        compute_s.append(t1 - t0)
        comm_s.append(t2 - t1)
        losses.append(float(loss.mean().asscalar()))
        if args.save_weights and step == 0:
            saved["first"] = flat_weights(params, ctx)
        if args.step_digests:  # untimed, after the step's pull
            step_digests.append(digest(p.data(ctx) for p in params))
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            say(kv, f"step {step + 1}/{args.steps} loss {losses[-1]:.4f} "
                    f"compute {1e3 * (t1 - t0):.1f} ms comm {1e3 * (t2 - t1):.1f} ms")
    loop_seconds = time.perf_counter() - loop_start
    digest_last = digest(p.data(ctx) for p in params)

    # Wait for every worker (MXNet 1.9 has no public barrier: push's docstring points to this
    # one), then pull the final weights (parameter i has key i): dist_async workers agree.
    kv._barrier()
    for i, p in enumerate(params):
        kv.pull(i, out=p.data(ctx))
    mx.nd.waitall()
    digest_synced = digest(p.data(ctx) for p in params)
    if args.save_weights and rank == 0:
        np.savez(args.save_weights, final=flat_weights(params, ctx), **saved)
    train_loss = float(loss_fn(net(mx.nd.array(x, ctx=ctx)), mx.nd.array(y, ctx=ctx))
                       .mean().asscalar())
    predicted = net(mx.nd.array(x_test, ctx=ctx)).argmax(axis=1).asnumpy()
    accuracy = float((predicted == digits.y_test).mean())
    say(kv, f"done: {args.steps - args.warmup_steps} timed steps in {loop_seconds:.3f} s, "
            f"train loss {train_loss:.4f}, test accuracy {accuracy:.3f}")

    push_pull = time_push_pull(kv, [kb * 1024 for kb in args.sizes_kb])
    report(kv, kvstore=kv.type, device=str(ctx), data=digits.source, steps=args.steps,
           global_batch=args.global_batch, local_batch=local_batch, param_bytes=param_bytes,
           param_arrays=len(params), loop_seconds=loop_seconds, losses=losses,
           compute_s=compute_s[args.warmup_steps:], comm_s=comm_s[args.warmup_steps:],
           train_loss=train_loss, test_accuracy=accuracy, digest_last=digest_last,
           digest_synced=digest_synced, step_digests=step_digests, push_pull=push_pull,
           compute_samples_by_batch=compute_samples, compute_by_batch={
               b: statistics.median(s) for b, s in compute_samples.items()})


def time_compute_samples(mx: Any, net: Any, loss_fn: Any, x: Any, y: Any, batches: list[int],
                         ctx: Any) -> dict[str, list[float]]:
    """Every repeat's seconds of forward + backward at each per-worker batch size: their
    spread says whether two batch sizes' times differ by more than the timing noise."""
    def step(data: Any, label: Any) -> None:
        with mx.autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()

    inputs = {str(b): (mx.nd.array(x[:b], ctx=ctx), mx.nd.array(y[:b], ctx=ctx)) for b in batches}
    works = {b: (lambda d=data, lb=label: step(d, lb)) for b, (data, label) in inputs.items()}
    # in turns, so that a burst of load slows every size alike; the engine is asynchronous
    timed = benchmark_in_turns(works, sync=lambda _: mx.nd.waitall(), warmup=2, repeat=10)
    return {b: r.samples for b, r in timed.items()}


def flat_weights(params: list[Any], ctx: Any) -> Any:
    return np.concatenate([p.data(ctx).asnumpy().ravel() for p in params])


def digest(arrays: Iterable[Any]) -> str:
    """:func:`~helpers.training.weights_checksum` of MXNet (or NumPy) arrays."""
    return weights_checksum([a.asnumpy() if hasattr(a, "asnumpy") else a for a in arrays])


def parse_args(argv: list[str] | None = None,
               environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """The flags and the ``DMLC_*`` environment, checked before MXNet is imported."""
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kvstore", default="dist_sync", choices=["dist_sync", "dist_async"])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup-steps", type=int, default=2, help="steps left out of timings")
    parser.add_argument("--slow-rank", type=int, default=-1, help="this rank sleeps each step")
    parser.add_argument("--slow-ms", type=float, default=0.0)
    parser.add_argument("--compute-batches", type=int, nargs="*", default=[])
    parser.add_argument("--sizes-kb", type=int, nargs="*", default=[])
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--step-digests", action="store_true",
                        help="hash the weights after every step")
    parser.add_argument("--save-weights", default="", metavar="FILE.npz",
                        help="rank 0's weights before and after the first and the last step")
    args = parser.parse_args(argv)
    check_flags(parser, args, ints={
        "steps": (1, None), "global_batch": (1, 1 << 20), "hidden": (1, 1 << 16), "seed": (0, None),
        "warmup_steps": (0, None), "slow_rank": (-1, None), "compute_batches": (1, 1 << 20),
        "sizes_kb": (1, 1 << 20), "log_every": (1, None)},
        numbers={"lr": {"above": 0}, "slow_ms": {"minimum": 0}}, problem=dmlc_env_problem(env))
    if args.steps <= args.warmup_steps:
        parser.error("--steps must be larger than --warmup-steps")
    if args.global_batch < (workers := int(env["DMLC_NUM_WORKER"])):
        parser.error(f"--global-batch {args.global_batch} is smaller than the number of workers "
                     f"({workers}): every worker needs at least one example per step")
    return args


if __name__ == "__main__":
    main()
