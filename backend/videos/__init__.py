"""The video catalog: which file each benchmark item's video is, and what probing it found.

``catalog`` reads and replaces the store's ``videos`` table; ``layouts`` maps a benchmark's published
annotation files (or a template / two-column file) to paths; ``probe`` opens each file once;
``link`` and ``check`` are the two ``trajaudit videos`` commands.
"""
