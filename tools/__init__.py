"""The maintainers' tools: nothing here is imported by the notebooks or by :mod:`helpers`.

execute        store executed notebooks (clean kernel, ci profile)    make notebooks
run_series     run the series on this machine's profile, with report  make run
report         REPORT.md from the notebooks' saved results
notebook_setup Colab/Kaggle badges and the setup cell in every notebook
hygiene        no execution timestamps or other volatile metadata
student        copies without solutions                               make student
teaching       TEACHING.md's run minutes from a run of the suite      make teaching
markdown       the one markdown table renderer; cells: cell conventions
"""
