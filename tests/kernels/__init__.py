"""Tests of the compiled kernels (``dafzarr._*``, built from ``_ext/*.pyx``)."""
