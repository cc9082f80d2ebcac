"""Push and pull on MXNet's distributed kvstore: what the servers return, and how long it takes.

Notebook 09: each worker pushes ``rank + 1`` (times the round number) into one key and
pulls back the servers' sum of all workers' pushes (``dist_sync`` only: a ``dist_async``
server has no updater without an optimizer, and aborts). Notebook 11 (``--groups``,
``--sizes-kb``): for each group size g, the workers of rank < g time push + pull round
trips while the others wait at a barrier (``dist_sync`` answers a push only once every
worker has pushed, so only the whole cluster can be its group). ``--start-file`` lets a
launcher start the cluster early and have it measure when the machine is quiet.
"""

import argparse
import os
import time
from collections.abc import Mapping
from typing import Any

from helpers.frameworks import import_mxnet
from helpers.workers import mx_worker
from helpers.workers.common import check_flags
from helpers.workers.mx_worker import message_key, report, say, time_push_pull

KEY_PREFIX = "message"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    mx = import_mxnet()
    (time_groups if args.groups else sum_pushes)(mx, mx_worker.connect(args.kvstore), args)


def sum_pushes(mx: Any, kv: Any, args: argparse.Namespace) -> None:
    kv.init("weights", mx.nd.zeros((2, 3)))
    pulled = []
    for round_ in range(1, args.rounds + 1):
        kv.push("weights", mx.nd.ones((2, 3)) * (kv.rank + 1) * round_)
        out = mx.nd.zeros((2, 3))
        kv.pull("weights", out=out)
        pulled.append(out.asnumpy().tolist())
        say(kv, f"round {round_}: pushed {(kv.rank + 1) * round_}, pulled {pulled[-1][0][0]:g}")
    # Keys live on servers: a list of keys is spread over them, each summed separately.
    keys = [f"layer{i}" for i in range(4)]
    kv.init(keys, [mx.nd.zeros((8,)) for _ in keys])
    kv.push(keys, [mx.nd.full((8,), 10 ** i) for i, _ in enumerate(keys)])
    outs = [mx.nd.zeros((8,)) for _ in keys]
    kv.pull(keys, out=outs)
    per_key = [float(o[0].asscalar()) for o in outs]
    say(kv, f"pulled per key: {per_key}")
    report(kv, kvstore=kv.type, pulled=pulled, per_key=per_key)


def time_groups(mx: Any, kv: Any, args: argparse.Namespace) -> None:
    sizes = [kb * 1024 for kb in args.sizes_kb]
    keys = [message_key(KEY_PREFIX, i) for i in range(len(sizes))]
    kv.init(keys, [mx.nd.zeros((size // 4,)) for size in sizes])  # every worker takes part
    synchronous = is_synchronous(kv.type)
    if not synchronous:  # an async server applies every push with an optimizer; it needs one
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=1e-3))
    if args.start_file:
        wait_for_file(args.start_file, args.start_timeout)
    for group in args.groups:
        kv._barrier()  # MXNet's global barrier among workers
        if kv.rank < group:
            rows = time_push_pull(kv, sizes, repeat=args.repeat, warmup=args.warmup,
                                  first_key=KEY_PREFIX, init=False)
            say(kv, f"group of {group}: " + ", ".join(
                f"{r['bytes']} B {r['median_s'] * 1e3:.2f} ms" for r in rows))
            correct = None  # an async server's value depends on the order pushes came in
            if synchronous:  # every worker pushes ones once more: it returns their sum
                correct = all(sum_of_ones(mx, kv, key, size) == group
                              for key, size in zip(keys, sizes, strict=True))
            report(kv, workers=group, kvstore=kv.type, push_pull=rows, sum_correct=correct)
        kv._barrier()


def is_synchronous(kind: str) -> bool:
    """Whether a server of this kvstore kind waits for every worker's push (all but async)."""
    return "async" not in kind


def sum_of_ones(mx: Any, kv: Any, key: str, size: int) -> float | None:
    """Push ones into ``key`` and pull: the value of every element (the workers' sum under
    dist_sync), or None if they differ. Fresh arrays: on a CPU MXNet may pull into the very
    buffer it pushed from (the timed rounds reuse theirs)."""
    kv.push(key, mx.nd.ones((size // 4,)))
    out = mx.nd.zeros((size // 4,))
    kv.pull(key, out=out)
    low, high = float(out.min().asscalar()), float(out.max().asscalar())
    return low if low == high else None


def wait_for_file(path: str, timeout: float) -> None:
    """Block until ``path`` exists; after ``timeout`` seconds end the process with code 1
    (at once: a normal exit would wait in ps-lite's shutdown barrier for the others)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            print(f"no start signal ({os.path.basename(path)}) after {timeout:g} s", flush=True)
            os._exit(1)
        time.sleep(0.02)


def parse_args(argv: list[str] | None = None,
               environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """The flags and the ``DMLC_*`` environment, checked before MXNet is imported."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kvstore", default="dist_sync", choices=mx_worker.DIST_KINDS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--groups", type=int, nargs="*", default=[], help="group sizes to time")
    parser.add_argument("--sizes-kb", type=int, nargs="*", default=[], help="message sizes (KiB)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--start-file", default="", help="measure once this file exists")
    parser.add_argument("--start-timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    check_flags(parser, args, ints={"rounds": (1, 10_000), "sizes_kb": (1, 1 << 20),
                                    "groups": (1, 64), "repeat": (1, 10_000),
                                    "warmup": (0, 10_000)}, numbers={"start_timeout": {"above": 0}},
                problem=mx_worker.dmlc_env_problem(environ))
    workers = int((os.environ if environ is None else environ)["DMLC_NUM_WORKER"])
    if bool(args.groups) != bool(args.sizes_kb) or max(args.groups, default=0) > workers:
        parser.error(f"--groups (at most the cluster's {workers} workers) and --sizes-kb "
                     "go together: give both to time round trips, neither to sum pushes")
    if args.groups and is_synchronous(args.kvstore) and set(args.groups) != {workers}:
        parser.error(f"under {args.kvstore} a server answers a push only once all {workers} "
                     f"workers of the cluster have pushed: --groups {workers} (the whole "
                     "cluster) only, or --kvstore dist_async to time smaller groups")
    return args


if __name__ == "__main__":
    main()
