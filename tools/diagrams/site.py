"""The website's pictures (notebook "site": written to tools/site/static/, not into a cell)."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, box, canvas, label

PARTS = [
    ("one machine,\nits devices", "device",
     ["00 environment", "01 devices", "02 placement", "03 copies", "04 matrix power"]),
    ("many devices,\none process", "device", ["05 MirroredStrategy"]),
    ("a cluster of\nprocesses", "server",
     ["06 multi-worker", "07 parameter servers", "08 TF1 runtime", "09 MXNet kvstore"]),
    ("why it scales\nas it does", "host",
     ["10 speed-up", "11 all-reduce", "12 rooflines", "15 batch size, MFU"]),
    ("beyond data\nparallelism", "data", ["13 model, pipeline", "14 saving memory"]),
]


@diagram("course-map", "site", alt=(
    "The course in five parts, left to right: one machine and its devices (notebooks 00 to "
    "04), many devices in one process (05), a cluster of processes (06 to 09), why training "
    "scales as it does (10, 11, 12 and 15), and beyond data parallelism (13 and 14)."),
    size=(10.0, 3.6))
def course_map(fig):
    ax = canvas(fig, 10.0, 3.6)
    width, gap = 1.68, 0.33
    for i, (title, role, notebooks) in enumerate(PARTS):
        x = 0.1 + i * (width + gap)
        label(ax, x + width / 2, 3.3, title, size=10, bold=True)
        for j, name in enumerate(notebooks):
            box(ax, x, 2.45 - j * 0.55, width, 0.42, name, role=role, size=9)
        if i:
            arrow(ax, (x - gap + 0.02, 2.66), (x - 0.02, 2.66), colour="muted")
