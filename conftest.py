"""pytest set-up shared by the unit tests and the notebook runs.

Notebooks are stored executed on the ``ci`` profile; validating them on any other
profile would change their sizes and outputs, so the profile is fixed here (the kernel
nbval starts inherits this environment). ``make run`` is the way to execute the series
on the profile of the machine at hand.
"""

import os

os.environ.setdefault("SERIES_PROFILE", "ci")
os.environ.setdefault("PYTHONUNBUFFERED", "1")
