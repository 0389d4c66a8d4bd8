#!/bin/bash
# Build and install dafzarr into ${PREFIX}. conda-build runs this from its copy of the source
# tree (`source: path: ..`), which may carry a developer's in-place build: remove it so every
# compiled module is built here, against this environment's Python and compiler.
set -euxo pipefail

rm -rf build dist ./*.egg-info
find dafzarr -maxdepth 1 -type f \( -name '*.so' -o -name '*.pyd' \) -delete
find _ext -maxdepth 1 -type f -name '*.c' -delete

"${PYTHON}" -m pip install . -vv --no-deps --no-build-isolation
