"""Model adapters: one per family behind one interface (``base``), tiny offline models, full-size random ones.

Importing this package loads no torch; ``base.load_adapter`` imports a family's module on demand.
"""
