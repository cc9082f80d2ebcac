"""The maintainers' tools: storing executed notebooks, ``make run``'s report, student copies.

Nothing here is imported by the notebooks or by :mod:`helpers`; learners never need it.
"""
