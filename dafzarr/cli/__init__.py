"""The ``dafzarr`` command line (also ``python -m dafzarr``).

Exit status: 0 on success, 1 when a command fails (bad input, damaged data, an entry that
does not verify), 2 on a usage error, 130 on Ctrl-C (no traceback) and 141 when standard
output is closed early (``dafzarr zip ls big.zip | head`` ends quietly). The implementation
lives in ``dafzarr._core.cli``.
"""

from __future__ import annotations

from .._core.cli import main

__all__ = ["main"]
