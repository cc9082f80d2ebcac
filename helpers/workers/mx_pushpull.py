"""Push and pull on MXNet's distributed kvstore: what the servers return to each worker.

Each worker pushes ``rank + 1`` (times the round number) into one key and pulls it back;
the servers sum the pushes of all workers, so every worker pulls the same sum. With
``--sizes-kb`` it then times push + pull round trips for each message size.
Start it through :class:`helpers.mx_cluster.LocalMXCluster`.

Security: ps-lite authenticates nobody, and the servers this program pushes to unpickle
what they receive. Keep the cluster on 127.0.0.1 or, across machines, on a private
network, a VPN or SSH tunnels (:func:`helpers.mx_cluster.shell_commands`).
"""

import argparse
import math
from collections.abc import Mapping

from helpers.frameworks import import_mxnet
from helpers.workers.common import check_flags
from helpers.workers.mx_worker import (
    DIST_KINDS,
    connect,
    dmlc_env_problem,
    report,
    say,
    time_push_pull,
)

#: The largest array pushed (elements): 1 GiB of float32.
MAX_ELEMENTS = 1 << 28


def parse_args(argv: list[str] | None = None,
               environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """The flags and the ``DMLC_*`` environment, checked before MXNet is imported."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kvstore", default="dist_sync", choices=DIST_KINDS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--shape", type=int, nargs=2, default=(2, 3))
    parser.add_argument("--sizes-kb", type=int, nargs="*", default=[])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    check_flags(parser, args, ints={"rounds": (1, 10_000), "shape": (1, MAX_ELEMENTS),
                                    "sizes_kb": (1, 4 * MAX_ELEMENTS // 1024),
                                    "repeat": (1, 10_000)})
    if math.prod(args.shape) > MAX_ELEMENTS:
        parser.error(f"--shape {args.shape[0]} {args.shape[1]} has more than {MAX_ELEMENTS} "
                     "elements (1 GiB of float32); push a smaller array")
    problem = dmlc_env_problem(environ)
    if problem:
        parser.error(problem)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    mx = import_mxnet()
    kv = connect(args.kvstore)
    shape = tuple(args.shape)
    kv.init("weights", mx.nd.zeros(shape))
    pulled = []
    for round_ in range(1, args.rounds + 1):
        kv.push("weights", mx.nd.ones(shape) * (kv.rank + 1) * round_)
        out = mx.nd.zeros(shape)
        kv.pull("weights", out=out)
        value = out.asnumpy()
        say(kv, f"round {round_}: pushed {(kv.rank + 1) * round_}, pulled {value[0, 0]:g}")
        pulled.append(value.tolist())

    # Keys live on servers: a list of keys is spread over them, each summed separately.
    keys = [f"layer{i}" for i in range(4)]
    kv.init(keys, [mx.nd.zeros((8,)) for _ in keys])
    kv.push(keys, [mx.nd.full((8,), 10 ** i) for i, _ in enumerate(keys)])
    outs = [mx.nd.zeros((8,)) for _ in keys]
    kv.pull(keys, out=outs)
    per_key = [float(o[0].asscalar()) for o in outs]
    say(kv, f"pulled per key: {per_key}")

    timings = []
    if args.sizes_kb:
        timings = time_push_pull(kv, [kb * 1024 for kb in args.sizes_kb], repeat=args.repeat,
                                 first_key="message")
        for row in timings:
            say(kv, f"push+pull {row['bytes']} bytes: {row['median_s'] * 1e3:.3f} ms")
    report(kv, kvstore=kv.type, pulled=pulled, per_key=per_key,
           push_pull=[{k: r[k] for k in ("bytes", "median_s", "best_s")} for r in timings])


if __name__ == "__main__":
    main()
