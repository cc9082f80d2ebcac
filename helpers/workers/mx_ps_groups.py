"""Time parameter-server round trips for groups of 1, 2, ... of a ps-lite cluster's workers.

Every worker of a :class:`helpers.mx_cluster.LocalMXCluster` runs this program.
For each group size g, the workers of rank < g push a message of every size to the
server and pull it back, timing each round trip, while the other workers wait at a
barrier: the same cluster measures 1, 2 and 4 workers without being started three
times. With ``--start-file`` the workers join the cluster and then wait for that file
before measuring, so a launcher can start them early, while it does other work, and
let them measure when the machine is otherwise quiet.

It uses ``dist_async``, where a server handles each push as it arrives. Under
``dist_sync`` (notebooks 09 and 10) the server would hold every pull until *all* workers
of the cluster had pushed, so a group smaller than the cluster could not exchange at
all. In both modes the server receives one message from every active worker and sends
one back to each; the difference is that an asynchronous server applies each push to
the stored value at once, which needs an optimizer on the server (plain SGD here: one
multiply-add per element, as cheap as the sum a synchronous server computes).
"""

from helpers.frameworks import import_mxnet

mx = import_mxnet()

import argparse  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

from helpers.workers.mx_worker import (  # noqa: E402
    connect,
    message_key,
    report,
    say,
    time_push_pull,
)

KEY_PREFIX = "message"


def wait_for_file(path: str, timeout: float) -> None:
    """Block until ``path`` exists; after ``timeout`` seconds end the process with code 1
    (at once: a normal exit would wait in ps-lite's shutdown barrier for the others)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            print(f"no start signal ({os.path.basename(path)}) after {timeout:g} s", flush=True)
            os._exit(1)
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-kb", type=int, nargs="+", default=[4, 64, 1024])
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--start-file", default="",
                        help="wait until this file exists before measuring: the launcher can "
                             "start the cluster early and let it measure when nothing else runs")
    parser.add_argument("--start-timeout", type=float, default=600.0)
    args = parser.parse_args()

    kv = connect("dist_async")
    if max(args.groups) > kv.num_workers:
        raise SystemExit(f"--groups {args.groups} larger than the {kv.num_workers} workers")
    sizes = [kb * 1024 for kb in args.sizes_kb]
    keys = [message_key(KEY_PREFIX, i) for i in range(len(sizes))]
    kv.init(keys, [mx.nd.zeros((size // 4,)) for size in sizes])  # every worker takes part
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1e-3))  # an async server must update
    if args.start_file:
        wait_for_file(args.start_file, args.start_timeout)
    for group in args.groups:
        kv._barrier()  # MXNet's global barrier among workers
        if kv.rank < group:
            rows = time_push_pull(kv, sizes, repeat=args.repeat, warmup=args.warmup,
                                  first_key=KEY_PREFIX, init=False)
            say(kv, f"group of {group}: " + ", ".join(
                f"{r['bytes']} B {r['median_s'] * 1e3:.2f} ms" for r in rows))
            report(kv, workers=group, push_pull=[
                {k: r[k] for k in ("bytes", "median_s", "best_s")} for r in rows])
        kv._barrier()


if __name__ == "__main__":
    main()
