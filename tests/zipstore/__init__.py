"""Tests of ``dafzarr.zipstore``: MmapZipStore."""
