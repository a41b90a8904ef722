"""What every page shares: URL-backed state, cached backend calls, chart/table helpers."""
