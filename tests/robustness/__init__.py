"""Every operation under failure: crash states, injected I/O errors, fuzzed parsers, atomic
outputs, refused casts."""
