"""Tests of the shared private layer: byte sources, codecs, CRC-32, mappings and their limits."""
