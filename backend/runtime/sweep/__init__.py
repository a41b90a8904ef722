"""The sweep runner: every missing (model, item, configuration) cell of a grid, with repeated work skipped.

``plan`` says which cells to run (and refuses or resumes when some are stored), grouped by video;
``frames`` decodes each video once for every budget; ``engine`` runs a video group through an
adapter with the reuse switches of :mod:`backend.runtime.inference.reuse`; ``shard`` turns answers into
store rows and writes them in batches; ``verify`` re-runs cells cold and measures drift;
``accounting`` turns phase timings into shares and speed-up ceilings; ``executors`` runs shards
in this process or on Ray actors; ``runner`` ties them together for the CLI and the benchmark.
"""
