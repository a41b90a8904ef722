"""Everything that runs models: the re-run queue client (validate, submit, wait), workers and their
pool, the model registry, frame sampling, video decoding, model adapters (``inference/``) and sweeps.

Only this package writes jobs to ``store.queue``; torch and transformers are imported only here.
"""
