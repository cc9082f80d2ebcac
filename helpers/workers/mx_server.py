"""A ps-lite scheduler or server for MXNet's distributed kvstore.

Run with ``DMLC_ROLE=scheduler`` or ``DMLC_ROLE=server`` (and the other ``DMLC_*``
variables, see :func:`helpers.mx_cluster.dmlc_env`). There is nothing to write: when
MXNet is imported in such a process, it creates the kvstore server, serves pushes and
pulls (and runs the optimizer the workers send it) until every worker has finished, and
then exits the process from inside ``import mxnet``. The variables are checked first
(:func:`helpers.workers.mx_worker.dmlc_env_problem`): MXNet itself crashes on a missing
port and waits forever on a count it cannot read.

Security: ps-lite has no authentication, and a server *unpickles* the commands workers
send it (MXNet's ``kvstore_server.py``), so anyone who can reach its port can run code
as you. It listens on ``DMLC_NODE_HOST``: keep that 127.0.0.1 on one machine; on several,
use only a private network, a VPN or SSH tunnels, with the ports open only between the
cluster's machines.
"""

import argparse
import sys

from helpers.workers.mx_worker import dmlc_env_problem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    problem = dmlc_env_problem(roles=("scheduler", "server"))
    if problem:
        parser.error(problem)
    from helpers.frameworks import import_mxnet  # noqa: PLC0415  (after the checks)

    import_mxnet()  # a scheduler or server never returns from this call
    raise SystemExit(
        "helpers.workers.mx_server returned from `import mxnet`, so DMLC_ROLE is not "
        "'scheduler' or 'server'; workers run a worker program such as helpers.workers.mx_pushpull"
    )


if __name__ == "__main__":
    sys.exit(main())
