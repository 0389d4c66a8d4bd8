"""Build the private compiled modules; all metadata lives in pyproject.toml."""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def ext(name: str, **kwargs: object) -> Extension:
    """One compiled module: ``_ext/<name>.pyx`` -> ``dafzarr.<name>``."""
    return Extension(f"dafzarr.{name}", [f"_ext/{name}.pyx"], include_dirs=["_ext"], **kwargs)


extensions = [
    # file mapping at a fixed base, flock, msync/fsync, CRC-32 kernels (threaded for large ranges)
    ext("_posix", extra_compile_args=["-pthread"], extra_link_args=["-pthread"]),
    ext("_h5chunks"),  # H5Dchunk_iter through h5py's C-API capsule: no HDF5 headers, no link
    ext("_lz4seg"),  # LZ4 block sequence walk: ArrayFile's independently decodable segments
    ext("_zipdir"),  # ZIP central directory parsed in one pass; the index of served keys
    ext("_transpose"),  # cache-blocked transposition: column-major matrices from row-major input
    ext("_affooter"),  # ArrayFile footer records (rkyv) read in one loop: opening many arrays
    ext("_indices"),  # 1-based sparse indices written and checked (canonical, in range) in one pass
    ext("_groupby"),  # sums of a CSC matrix's rows by group in one pass (query group-by)
    ext("_vlen"),  # vlen-utf8 chunks decoded with each distinct string made once
]

directives = {"language_level": 3, "embedsignature": True}
if os.environ.get("DAFZARR_LINETRACE") == "1":  # opt-in line tracing for Cython coverage
    directives["linetrace"] = True
    for e in extensions:
        e.define_macros.append(("CYTHON_TRACE_NOGIL", "1"))


class cythonize_then_build_ext(build_ext):
    """Translate the ``.pyx`` sources to C when the extensions are built, not whenever this
    file runs: making an sdist (which ships the ``.pyx``, not the C) then compiles nothing."""

    def run(self) -> None:
        from Cython.Build import cythonize

        translated = cythonize(
            self.extensions,
            include_path=["_ext"],
            build_dir="build/cython",
            compiler_directives=directives,
        )
        # Each extension keeps its object (finalized by setuptools), with its C sources now.
        c_sources = {e.name: e for e in translated}
        for e in self.extensions:
            e.sources, e.depends = c_sources[e.name].sources, c_sources[e.name].depends
        super().run()


setup(ext_modules=extensions, cmdclass={"build_ext": cythonize_then_build_ext})
