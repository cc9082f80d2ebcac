"""A plain TensorFlow server task: start a gRPC server for this task and serve forever.

Parameter servers and the workers of ``ParameterServerStrategy`` run no program of their
own: the coordinator sends them functions to run and variables to hold. All such a task
needs is a ``tf.distribute.Server`` for its place in the cluster, joined so the process
stays alive. On a real machine: ``TF_CONFIG='{"cluster": {...}, "task": {"type": "ps",
"index": 0}}' python -m helpers.workers.tf_server`` (or ``--resolver slurm`` inside
``srun``). It listens on every address and runs what any client sends: see
:mod:`helpers.workers.common` on security.
"""

import argparse
import sys

from helpers.frameworks import import_tensorflow
from helpers.workers.common import RESOLVERS, check_flags, cluster_resolver, resolver_problem


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tf = import_tensorflow(keras=False)  # this program uses no Keras: start faster
    for gpu in tf.config.list_physical_devices("GPU"):  # tasks on one machine share a GPU
        tf.config.experimental.set_memory_growth(gpu, True)
    resolver = cluster_resolver(args.resolver)
    if args.threads:
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc", start=True,
    )
    print(f"{resolver.task_type}:{resolver.task_id} serving at {server.target}", flush=True)
    server.join()  # serves until the process is ended
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags, checked (with the cluster resolver's environment) before TensorFlow loads."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolver", choices=RESOLVERS, default="tf_config",
                        help="where the cluster comes from (default: TF_CONFIG)")
    parser.add_argument("--threads", type=int, default=0,
                        help="inter-op threads of this task (0: TensorFlow's choice)")
    args = parser.parse_args(argv)
    check_flags(parser, args, ints={"threads": (0, 1024)}, problem=resolver_problem(args.resolver))
    return args


if __name__ == "__main__":
    sys.exit(main())
