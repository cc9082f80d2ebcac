"""The TF1 distributed digits CNN: one program for the parameter server and every worker.

TensorFlow 1's *between-graph replication*, through ``tf.compat.v1``: every task runs this
file, its flags saying which job and task it is and where the others are. The ps only
serves (``server.join()``); each worker builds its own graph with ``replica_device_setter``
(variables on the ps, computation on itself); worker 0, the chief, initialises the
variables while the others wait. ``--nodevice_filters`` lets a worker hang at its session
start (notebook 08's fault).
"""

import sys
import time
from typing import Any

import numpy as np
from absl import flags as absl_flags

from helpers.frameworks import import_tensorflow
from helpers.machine import require_int, require_number
from helpers.training import load_digits


def main(argv: list[str] | None = None) -> int:
    try:
        fv = parse_flags(list(sys.argv if argv is None else argv))
    except ValueError as exc:
        print(f"tf1_mnist: {exc}", file=sys.stderr, flush=True)
        return 2
    sys.stdout.reconfigure(line_buffering=True)  # each line reaches the log at once
    tf = import_tensorflow(keras=False)  # this program uses no Keras: start faster
    v1 = tf.compat.v1
    v1.disable_eager_execution()  # TF1 graphs and sessions, as the program was written
    cluster = v1.train.ClusterSpec({"ps": _hosts(fv.ps_hosts),
                                    "worker": _hosts(fv.worker_hosts)})
    server = v1.train.Server(cluster, job_name=fv.job_name, task_index=fv.task_index)
    print(f"{fv.job_name} {fv.task_index}: server at {server.target}")
    if fv.job_name == "ps":
        server.join()  # serves the variables until the process is ended from outside
        return 0
    # A worker: between-graph replication, its own graph, session and training loop.
    i, is_chief, data = fv.task_index, fv.task_index == 0, load_digits()
    if is_chief:
        print(f"data: {data.describe()}")
    # Variables go to /job:ps (round-robin over the ps tasks), ops to this worker.
    setter = v1.train.replica_device_setter(worker_device=f"/job:worker/task:{i}",
                                            cluster=cluster)
    with v1.device(setter):
        global_step = v1.train.get_or_create_global_step()
        model = build_model(tf, data.x_train.shape[1])
        train_op = v1.train.AdamOptimizer(fv.learning_rate).minimize(
            model["loss"], global_step=global_step)
        init_op = v1.global_variables_initializer()
    print(f"worker {i}: variable {global_step.op.name} on {global_step.device}, "
          f"loss on {model['loss'].device}")

    config = v1.ConfigProto()
    config.gpu_options.allow_growth = True  # tasks on one machine share its GPUs
    if fv.device_filters:
        config.device_filters.extend(["/job:ps", f"/job:worker/task:{i}"])
    print(f"worker {i}: device_filters={list(config.device_filters)}; "
          f"opening a {fv.session} session")
    rng = np.random.default_rng(100 + i)  # each worker draws its own batches

    def train(sess: Any, should_stop: Any) -> int:
        print(f"worker {i}: session ready")
        local, step = 0, sess.run(global_step)
        while not should_stop() and step < fv.steps:
            idx = rng.integers(0, len(data.x_train), fv.batch_size)
            feed = {model["x"]: data.x_train[idx], model["y"]: data.y_train[idx]}
            _, acc, step = sess.run([train_op, model["accuracy"], global_step], feed)
            local += 1
            if local % fv.log_every == 0 or step >= fv.steps:
                print(f"Worker : {i}, Step: {step}, Accuracy (batch): {acc:.4f}")
        if is_chief:
            test = sess.run(model["accuracy"], {model["x"]: data.x_test, model["y"]: data.y_test})
            print(f"Test accuracy: {test:.4f}")
        return local

    began = time.monotonic()
    if fv.session == "supervisor":
        sv = v1.train.Supervisor(is_chief=is_chief, logdir=None, global_step=global_step,
                                 init_op=init_op, summary_op=None, saver=None,
                                 recovery_wait_secs=1)
        with sv.managed_session(server.target, config=config) as sess:
            local = train(sess, sv.should_stop)
        sv.stop()
    else:
        # The successor: hooks instead of services, and it stops the session itself.
        with v1.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                               config=config, save_checkpoint_secs=None,
                                               save_summaries_steps=None,
                                               log_step_count_steps=None) as sess:
            local = train(sess, sess.should_stop)
    print(f"worker {i}: done, {local} local steps in {time.monotonic() - began:.1f} s")
    return 0


def build_model(tf: Any, image_size: int) -> dict[str, Any]:
    """A tiny CNN (one 3x3 conv, one dense layer) as a TF1 graph with explicit variables."""
    v1 = tf.compat.v1
    x = v1.placeholder(tf.float32, [None, image_size, image_size, 1], name="x")
    y = v1.placeholder(tf.int64, [None], name="y")
    init = v1.glorot_uniform_initializer(seed=1)
    w_conv = v1.get_variable("w_conv", [3, 3, 1, 16], initializer=init)
    b_conv = v1.get_variable("b_conv", [16], initializer=v1.zeros_initializer())
    h = tf.nn.relu(tf.nn.conv2d(x, w_conv, strides=1, padding="SAME") + b_conv)
    if image_size > 16:  # MNIST's 28x28: pool to keep the dense layer small
        h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="SAME")
    flat = tf.reshape(h, [-1, int(np.prod(h.shape[1:]))])
    w_out = v1.get_variable("w_out", [flat.shape[1], 10], initializer=init)
    b_out = v1.get_variable("b_out", [10], initializer=v1.zeros_initializer())
    logits = tf.matmul(flat, w_out) + b_out
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return {"x": x, "y": y, "loss": loss, "accuracy": accuracy}


def define_flags(flags: Any) -> Any:
    """This program's flags, on a fresh ``FlagValues`` of ``flags`` (``tf.compat.v1.app.flags``,
    absl's) rather than the global ``FLAGS``: they can be defined again in one process."""
    fv = flags.FlagValues()
    on = {"flag_values": fv}
    flags.DEFINE_string("job_name", "", "'ps' or 'worker'", **on)
    flags.DEFINE_integer("task_index", 0, "index of this task within its job", **on)
    flags.DEFINE_string("ps_hosts", "", "comma-separated host:port of the ps tasks", **on)
    flags.DEFINE_string("worker_hosts", "", "comma-separated host:port of the workers", **on)
    flags.DEFINE_integer("steps", 60, "global training steps (all workers together)", **on)
    flags.DEFINE_integer("batch_size", 32, "examples per worker step", **on)
    flags.DEFINE_float("learning_rate", 0.003, "Adam learning rate", **on)
    flags.DEFINE_integer("log_every", 5, "print a progress line every N local steps", **on)
    flags.DEFINE_boolean("device_filters", True,
                         "restrict each worker's session to the ps and itself", **on)
    flags.DEFINE_enum("session", "supervisor", ["supervisor", "monitored"],
                      "Supervisor.managed_session or MonitoredTrainingSession", **on)
    return fv


def parse_flags(argv: list[str], flags: Any = None) -> Any:
    """Parse ``argv`` (``argv[0]`` is the program name), or ValueError naming the bad flag,
    rather than a gRPC or device error from TensorFlow later."""
    flags = flags or absl_flags  # what tf.compat.v1.app.flags re-exports
    fv = define_flags(flags)
    try:
        fv(list(argv))
    except flags.Error as exc:
        raise ValueError(f"bad command line: {exc}") from None
    if fv.job_name not in ("ps", "worker"):
        raise ValueError(f"--job_name must be 'ps' or 'worker', not {fv.job_name!r}")
    ps, workers = _hosts(fv.ps_hosts), _hosts(fv.worker_hosts)
    if not ps or not workers:
        raise ValueError("--ps_hosts and --worker_hosts must each list at least one "
                         "host:port, e.g. --ps_hosts=127.0.0.1:2222")
    for host in ps + workers:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{host!r} is not host:port with a port from 1 to 65535")
    n = len(ps) if fv.job_name == "ps" else len(workers)
    if not 0 <= fv.task_index < n:
        raise ValueError(f"--task_index must be 0 to {n - 1} for job {fv.job_name!r} "
                         f"({n} task(s) listed), not {fv.task_index}")
    for name in ("steps", "batch_size", "log_every"):
        require_int(f"--{name}", getattr(fv, name), 1)
    require_number("--learning_rate", fv.learning_rate, above=0)
    return fv


def _hosts(text: str) -> list[str]:
    return [h for h in text.split(",") if h]


if __name__ == "__main__":
    sys.exit(main())
