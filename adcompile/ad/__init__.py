"""Static differentiation: IR -> IR transforms (forward.py: JVP)."""
