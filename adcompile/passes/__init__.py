"""IR -> IR passes, run as a visible pipeline (see pipeline.py)."""
