"""One worker of synchronous multi-worker training (MultiWorkerMirroredStrategy).

Every worker runs this same program. It learns the cluster and its own place in it from
``TF_CONFIG`` (or SLURM / Kubernetes with ``--resolver``), builds the strategy, the model
and the optimizer, and trains with a custom loop; after every step the workers' gradients
have been summed by a collective all-reduce, so their weights stay identical. Worker 0 is
the chief: it writes the checkpoints a restarted cluster resumes from (on several
machines, into a folder all of them can read). A worker whose peers have not connected
within ``--connect-timeout`` seconds gives up and names them.
"""

import argparse
import json
import os
import re
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from helpers import training
from helpers.frameworks import import_tensorflow
from helpers.workers import common

#: Exit code of a worker that lost a peer (EX_TEMPFAIL: "try again", i.e. restart).
EXIT_PEER_LOST = 75


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tf = import_tensorflow()
    peer_lost = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
                 tf.errors.AbortedError, tf.errors.CancelledError)
    resolver = common.cluster_resolver(args.resolver)
    # The strategy waits for every worker to connect: give up after --connect-timeout.
    with common.deadline_for_peers(args.connect_timeout, args.resolver == "tf_config"):
        strategy, collective = make_strategy(tf, resolver, args.timeout, args.collective)
    task_type, task_id = strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id
    name = f"{task_type}-{task_id}"
    is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0
                                        and "chief" not in resolver.cluster_spec().jobs)

    def say(text: str) -> None:
        print(f"[{name}] {text}", flush=True)

    replicas = strategy.num_replicas_in_sync
    global_batch = args.batch_per_replica * replicas
    if global_batch > args.examples:  # known only now: the strategy counts the replicas
        print(f"mwms_train: error: the global batch, --batch-per-replica {args.batch_per_replica}"
              f" x {replicas} replicas = {global_batch}, is larger than --examples "
              f"{args.examples}: every step would hold all the examples, some twice; give "
              f"--examples {global_batch} or more, or a smaller --batch-per-replica",
              file=sys.stderr, flush=True)
        return 2
    say(f"cluster {resolver.cluster_spec().as_dict()}; {replicas} replicas in sync, "
        f"collective {collective}, global batch {global_batch}")
    x, y, source = training.training_arrays(args.examples, seed=args.seed)
    if args.try_fit:
        try_fit(tf, strategy, x, y, global_batch, say)

    with strategy.scope():
        model = training.build_model(x.shape[1:], seed=args.seed)
        optimizer = training.make_optimizer(args.learning_rate)
        step = training.make_update_counter()  # +1 per step, inside the train step
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)
    manager = None
    if args.checkpoint_dir:
        # Every worker saves (the variables' values are gathered collectively), but only
        # the chief's copy is kept; the others write to a private folder and delete it.
        latest = tf.train.latest_checkpoint(args.checkpoint_dir)
        if latest:
            checkpoint.restore(latest)
            say(f"resumed from {Path(latest).name} at step {int(step.numpy())}")
        write_dir = args.checkpoint_dir if is_chief else os.path.join(
            args.checkpoint_dir, f"tmp-{name}")
        manager = tf.train.CheckpointManager(checkpoint, write_dir, max_to_keep=2)
    start_step = int(step.numpy())
    if start_step == 0:
        say(f"starting from scratch on {source}")

    dataset = training.make_dataset(x, y, global_batch, seed=args.seed, start_step=start_step)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    train_step = training.make_train_step(strategy, model, optimizer, global_batch, step)

    losses: dict[int, float] = {}
    stale: dict[int, int] = {}  # 0 by construction under this synchronous strategy
    ended: dict[int, float] = {}  # seconds from the loop's start to the end of each step
    began = time.monotonic()
    s = start_step
    try:
        for s in range(start_step + 1, args.steps + 1):
            loss, staleness = train_step(iterator)
            losses[s], stale[s], ended[s] = float(loss), int(staleness), time.monotonic() - began
            say(f"step {s}/{args.steps} loss {losses[s]:.4f}")
            if manager is not None and (s % args.checkpoint_every == 0 or s == args.steps):
                manager.save(checkpoint_number=s)
                say(f"checkpoint saved at step {s}")
    except peer_lost as error:
        # A peer died: this process's collectives can never complete again. Say so in one
        # line and exit with a code that tells a launcher to restart the whole cluster.
        lines = [ln for ln in str(error).splitlines() if "unhealthy" in ln or "aborted" in ln]
        say(f"lost a peer during step {s}: {type(error).__name__}: "
            f"{(lines or [str(error).splitlines()[0]])[0].strip()}")
        say(f"exiting with code {EXIT_PEER_LOST}: restart the cluster to resume")
        os._exit(EXIT_PEER_LOST)  # skip TF's shutdown barrier, which waits for the dead peer
    seconds = time.monotonic() - began
    if manager is not None and not is_chief:
        shutil.rmtree(os.path.join(args.checkpoint_dir, f"tmp-{name}"), ignore_errors=True)

    checksum = training.weights_checksum(model)
    say(f"done: steps {start_step + 1}..{args.steps}, weights checksum {checksum}")
    if args.out_dir:
        (Path(args.out_dir) / f"{name}.json").write_text(json.dumps({
            "task": name, "is_chief": is_chief, "replicas": replicas, "collective": collective,
            "global_batch": global_batch, "start_step": start_step, "end_step": args.steps,
            "losses": losses, "staleness": stale, "step_ended_seconds": ended,
            "checksum": checksum, "seconds": seconds, "data": source}, indent=1))
    return 0


def make_strategy(tf: Any, resolver: Any, timeout: float, collective: str = "auto") -> Any:
    """MWMS with RING all-reduce on CPUs and NCCL on GPUs, and a timeout on collectives
    (a dead peer becomes an error on the survivors instead of a hang)."""
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:  # several workers may share one GPU on a single machine
        tf.config.experimental.set_memory_growth(gpu, True)
    if gpus:  # cuDNN's fastest kernels add in varying order: a step redone after a
        tf.config.experimental.enable_op_determinism()  # restart must repeat exactly
    collective = ("nccl" if gpus else "ring") if collective == "auto" else collective
    if collective == "nccl" and not gpus:
        raise SystemExit("mwms_train: error: --collective nccl needs a GPU in every worker and "
                         "this one has none; use --collective ring (or auto)")
    implementation = tf.distribute.experimental.CommunicationImplementation[collective.upper()]
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=implementation, timeout_seconds=timeout)
    return tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=resolver, communication_options=options), implementation.name


def try_fit(tf: Any, strategy: Any, x: Any, y: Any, global_batch: int, say: Any) -> None:
    """Run one step of Keras ``model.fit`` under the strategy and report what happens."""
    import keras  # here, not at the top: a notebook imports this module without Keras

    with strategy.scope():
        model = training.build_model(x.shape[1:], seed=1)
        model.compile(optimizer="adam",
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    try:
        with warnings.catch_warnings(action="ignore"):
            model.fit(training.make_dataset(x, y, global_batch), steps_per_epoch=1, verbose=0)
    except Exception as error:  # the failure is what we report
        text = re.sub(r"PerReplica:\{.*?\}\)", "PerReplica:{...})", " ".join(str(error).split()))
        say(f"model.fit FAILED with {type(error).__name__}: {text[:300]}")
    else:
        say("model.fit worked")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The flags, TF_CONFIG (or SLURM's variables) and the output folders, checked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="total training steps planned")
    parser.add_argument("--batch-per-replica", type=int, default=32)
    parser.add_argument("--examples", type=int, default=1024, help="training examples used")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0, help="weights and data order")
    parser.add_argument("--checkpoint-dir", default="",
                        help="save here every --checkpoint-every steps and resume from here")
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--out-dir", default="", help="write worker-<i>.json with the results")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds a collective may wait for a peer before failing")
    parser.add_argument("--collective", choices=("auto", "ring", "nccl"), default="auto",
                        help="auto: NCCL with GPUs, else RING (ring when workers share a GPU)")
    parser.add_argument("--try-fit", action="store_true", help="first try Keras model.fit")
    parser.add_argument("--connect-timeout", type=float, default=120.0,
                        help="seconds to wait for every task of the cluster to connect")
    parser.add_argument("--resolver", choices=common.RESOLVERS, default="tf_config")
    args = parser.parse_args(argv)
    common.check_flags(
        parser, args, ints={"steps": (1, None), "batch_per_replica": (1, 1 << 16),
                            "examples": (1, None), "checkpoint_every": (1, None),
                            "seed": (0, None)},
        numbers={"learning_rate": {"above": 0}, "timeout": {"above": 0},
                 "connect_timeout": {"above": 0}}, problem=common.resolver_problem(args.resolver))
    for flag, folder in (("--checkpoint-dir", args.checkpoint_dir), ("--out-dir", args.out_dir)):
        try:
            if folder:
                Path(folder).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            parser.error(f"{flag} {folder!r} cannot be created ({error.strerror}); give a "
                         "folder you can write to")
        if folder and not os.access(folder, os.W_OK | os.X_OK):
            parser.error(f"{flag} {folder!r} is not writable by this user; give a folder you "
                         "can write to")
    return args


if __name__ == "__main__":
    code = main()  # everything is saved by now: checkpoints, results, the log
    sys.stdout.flush()
    os._exit(code)  # skip TensorFlow's teardown, a second or more per process for nothing
