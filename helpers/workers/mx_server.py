"""A ps-lite scheduler or server for MXNet's distributed kvstore.

Run with ``DMLC_ROLE=scheduler`` or ``DMLC_ROLE=server`` (and the other ``DMLC_*``
variables, see :func:`helpers.cluster.mx_cluster.dmlc_env`). There is nothing to write: when
MXNet is imported in such a process, it creates the kvstore server, serves pushes and
pulls (and runs the optimizer the workers send it) until every worker has finished, and
then exits the process from inside ``import mxnet``.
"""

from helpers.frameworks import import_mxnet

if __name__ == "__main__":
    import_mxnet()  # a scheduler or server never returns from this call
    raise SystemExit(
        "helpers.workers.mx_server returned from `import mxnet`, so DMLC_ROLE is not "
        "'scheduler' or 'server'; workers run a worker program such as helpers.workers.mx_pushpull"
    )
