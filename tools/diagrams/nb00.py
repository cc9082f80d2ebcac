"""Notebook 00's diagrams: what the environment check looks at, and how the profile is chosen."""

from helpers.profiles import PROFILES
from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, arrow, box, canvas, label


@diagram("environment-check", "00", alt=(
    "Three layers of the learner's machine, from the bottom: the hardware (CPU cores, NVIDIA "
    "GPUs and their driver), the Python packages (numpy 2, TensorFlow 2.21, MXNet 1.9.1 "
    "installed apart) and the series (a profile of problem sizes, banners that say what is "
    "simulated). Beside each layer, the sections of this notebook that check it: the pins, "
    "MXNet's numpy names and one product in both frameworks for the packages; cores and GPUs "
    "for the hardware; the profile for the series. A bracket over all three layers stands for "
    "diagnose(), which looks for every known failure and names its fix."), size=(8.5, 3.4))
def environment_check(fig):
    ax = canvas(fig, 10.0, 4.0)
    layers = (("hardware", "CPU cores · NVIDIA GPUs\nand their driver (nvidia-smi)", "host",
               0.2, "3. how many cores and GPUs"),
              ("packages", "numpy 2 · TensorFlow 2.21\nMXNet 1.9.1 (installed apart)", "server",
               1.45, "1. do the pins hold?\n2. does MXNet import on numpy 2?\n"
               "4. one product in both frameworks"),
              ("the series", "a profile of problem sizes\nbanners for simulated devices",
               "device", 2.7, "3. which profile, which sizes"))
    for title, text, role, y, checks in layers:
        box(ax, 0.1, y, 1.6, 1.0, title, role=role, size=10, bold=True)
        box(ax, 1.7, y, 3.4, 1.0, text, role=role, size=9)
        arrow(ax, (6.0, y + 0.5), (5.15, y + 0.5), colour="muted")
        label(ax, 6.15, y + 0.5, checks, ha="left", size=9)
    ax.plot([9.55, 9.7, 9.7, 9.55], [0.2, 0.2, 3.7, 3.7], color=COLOURS["accent"], linewidth=1.4)
    label(ax, 9.85, 1.95, "5. diagnose(): every known failure, its fix", size=9)
    ax.texts[-1].set_rotation(90)


@diagram("profiles", "00", alt=(
    "How the series picks its problem sizes. If TensorFlow sees a GPU, the gpu profile: the "
    "full sizes of First Contact with TensorFlow (10,000 x 10,000 matrices) and of the "
    "multi-GPU tf.distribute tutorial (150-pixel images). Otherwise, with four or more CPU "
    "cores, the laptop profile: larger sizes. Otherwise the ci profile: small sizes, the whole "
    "series in minutes. The SERIES_PROFILE variable or the profile parameter overrides the "
    "choice."), size=(8.5, 3.2))
def profiles(fig):
    ax = canvas(fig, 10.0, 3.8)
    box(ax, 0.1, 2.75, 1.7, 0.7, "this\nmachine", role="host", size=9)
    box(ax, 2.4, 2.75, 2.2, 0.7, "TensorFlow\nsees a GPU?", role="white", size=9)
    box(ax, 2.4, 1.35, 2.2, 0.7, "4 or more\nCPU cores?", role="white", size=9)
    arrow(ax, (1.8, 3.1), (2.4, 3.1))
    arrow(ax, (3.5, 2.75), (3.5, 2.05), "no", offset=(0.25, -0.1))
    outcomes = (("gpu", 3.1, "yes", "First Contact's and the tutorial's sizes"),
                ("laptop", 1.7, "yes", "larger sizes, still minutes"),
                ("ci", 0.45, "no", "small sizes: the whole series in minutes"))
    for name, y, answer, what in outcomes:
        size = PROFILES[name].matpow_size
        box(ax, 5.4, y - 0.38, 4.5, 0.76, f"{name}: {what}\n(notebook 04's matrices "
            f"{size:,} × {size:,})", role="device", size=9)
        if name == "ci":
            ax.plot([3.5, 3.5], [1.35, y], color=COLOURS["accent"], linewidth=1.4)
        arrow(ax, (3.5, y) if name == "ci" else (4.6, y), (5.4, y), answer, offset=(0.0, 0.05))
    label(ax, 1.0, 1.0, "SERIES_PROFILE\nor profile = \"...\"\noverrides", size=8.5, muted=True)
