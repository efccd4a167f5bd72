"""Test-session settings: compiled code is cached in a directory of this session only, so the
tests neither depend on nor fill the user's compile cache."""

import os
import tempfile

os.environ.setdefault("ADCOMPILE_CACHE_DIR",
                      tempfile.mkdtemp(prefix="adcompile-test-cache-"))
