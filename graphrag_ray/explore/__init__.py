"""Seeing an index: exports for graph tools (`export.py`), a static offline explorer
(`site.py`) and plots of the build (`stats.py`), all read from a stored index version."""
