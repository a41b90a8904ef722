"""The numbers: pure functions of a response matrix, as docs/metrics.md defines them.

Nothing here reads a page, writes to the store or submits a job; a new metric goes here, with its
report in ``backend.views`` and its CLI twin in ``backend.cli``.
"""
