"""Sphinx configuration of the series' website (``make site``; see tools/site/__init__.py).

The pages are the stored notebooks, rendered with their outputs and never executed. Nothing
on a page may load from another host when it is read: no math renderer from a CDN (the
notebooks hold no LaTeX, and MyST's math syntax is off), no widget scripts (the calculators
are stored as pictures), and the launch badges are local images.
"""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # conf.py is copied into the staging folder
_pyproject = tomllib.loads((Path(__file__).parent / "pyproject.toml").read_text())
_url = _pyproject["project"]["urls"]["Repository"]

project = "Parallel and distributed deep learning, hands on"
author = "The series' authors"
release = version = _pyproject["project"]["version"]
copyright = "the series' authors, MIT licence"

extensions = ["myst_nb"]
nb_execution_mode = "off"          # the stored outputs are the page's
nb_merge_streams = True
myst_enable_extensions = ["colon_fence"]   # no dollarmath: nothing asks for MathJax
myst_heading_anchors = 3           # [text](glossary.md#all-reduce) finds the heading
suppress_warnings = ["mystnb.unknown_mime_type"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
master_doc = "index"

html_theme = "sphinx_book_theme"
html_title = "Parallel and distributed deep learning"
html_static_path = ["_static"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": _url,
    "repository_branch": "main",
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
