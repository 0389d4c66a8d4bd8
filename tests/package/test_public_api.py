"""The public API: every name a release has offered stays importable from where it was.

Modules move inside the package (splits into subpackages, one codec layer, one byte-source
layer); user code that imports ``dafzarr.X`` must not notice. A name may only leave this
table through a release with a DeprecationWarning, never by accident.
"""

from __future__ import annotations

import builtins
import importlib
import pkgutil
import re
import subprocess
import sys
import warnings

import pytest

import dafzarr
from dafzarr import errors
from tests.helpers import ROOT

PUBLIC: dict[str, set[str]] = {
    "dafzarr": {
        "ALL_MATRICES",
        "ALL_SCALARS",
        "ALL_VECTORS",
        "AddressSpaceError",
        "AlreadyOpenError",
        "AnnDataConversionError",
        "AppendOnlyError",
        "ArchiveFullError",
        "ArchiveInUseError",
        "ArchiveLockedError",
        "ArgumentError",
        "ArrayExistsError",
        "ArrayFile",
        "ArrayNotFoundError",
        "ArrayStats",
        "AttributeLossWarning",
        "BatchOpenError",
        "ClosedError",
        "Contract",
        "ContractExpectation",
        "CorruptArchiveError",
        "CorruptArrayFileError",
        "CorruptDafError",
        "CorruptDataError",
        "CorruptFooterError",
        "CreatedOutput",
        "DafContractError",
        "DafExistsError",
        "DafFormatError",
        "DafMismatchError",
        "DafMissingEntryError",
        "DafMissingError",
        "DafNotFoundError",
        "DafQueryError",
        "DafQueryParameterError",
        "DafQuerySyntaxError",
        "DafReadOnlyError",
        "DafzarrError",
        "DafzarrWarning",
        "DeltaCache",
        "EntryExistsError",
        "EntryNotFoundError",
        "FileConfig",
        "FormatLimitError",
        "GuaranteedOutput",
        "H5Error",
        "HttpDeadlineError",
        "HttpOptions",
        "HttpReadError",
        "IOFailureError",
        "IncompatibleSourcesError",
        "InvalidArgumentError",
        "InvalidArgumentTypeError",
        "MergeAction",
        "MissingFileError",
        "MmapZipStore",
        "NotFoundError",
        "OptionalInput",
        "OptionalOutput",
        "OutOfBoundsError",
        "OutputExistsError",
        "PackSourceError",
        "RecoveryWarning",
        "RefusedEntryWarning",
        "RequiredInput",
        "RkyvError",
        "ScanTimeoutError",
        "SelfCheckError",
        "StateError",
        "StatisticsWarning",
        "StorageIOError",
        "StorageLockError",
        "TruncatedDataError",
        "UnsafeCastError",
        "UnsafeEntryNameError",
        "UnstableFileSetError",
        "UnsupportedElementTypeError",
        "UnsupportedEntryError",
        "UnsupportedError",
        "UnsupportedDafError",
        "UnsupportedHDF5Error",
        "UnsupportedVariableWarning",
        "VariableLeftOutWarning",
        "ZarrDaf",
        "__version__",
        "adapter",
        "chain_reader",
        "chain_writer",
        "complete_chain",
        "complete_daf",
        "computation",
        "concatenate",
        "contractor",
        "copy_all",
        "copy_axis",
        "copy_matrix",
        "copy_scalar",
        "copy_tensor",
        "copy_vector",
        "escape_value",
        "memory_daf",
        "open_daf",
        "parse_query",
        "query_result_dimensions",
        "reconstruct_axis",
        "show_config",
        "unescape_value",
        "viewer",
    },
    "dafzarr.anndata": {
        "anndata_to_daf",
        "daf_to_anndata",
    },
    "dafzarr.arrayfile": {
        "ArrayExistsError",
        "ArrayFile",
        "ArrayInfo",
        "ArrayNotFoundError",
        "ArrayStats",
        "CorruptArrayFileError",
        "DeltaCache",
        "FileConfig",
        "UnsupportedElementTypeError",
    },
    "dafzarr.cli": {
        "main",
    },
    "dafzarr.daf": {
        "DafReader",
        "ZarrDaf",
        "chain_reader",
        "chain_writer",
        "complete_chain",
        "complete_daf",
        "convert_daf",
        "copy_daf",
        "describe_property",
        "memory_daf",
        "open_daf",
        "parse_daf_path",
        "viewer",
    },
    "dafzarr.daf.ops": {
        "ALL_MATRICES",
        "ALL_SCALARS",
        "ALL_VECTORS",
        "MergeAction",
        "concatenate",
        "adapter",
        "copy_all",
        "copy_axis",
        "copy_matrix",
        "copy_scalar",
        "copy_tensor",
        "copy_vector",
        "Contract",
        "ContractDaf",
        "ContractExpectation",
        "CreatedOutput",
        "ElementType",
        "GuaranteedOutput",
        "OptionalInput",
        "OptionalOutput",
        "RequiredInput",
        "computation",
        "contractor",
        "reconstruct_axis",
    },
    "dafzarr.daf.query": {
        "Abs",
        "AndMask",
        "AndNegatedMask",
        "AsAxis",
        "Axis",
        "BeginMask",
        "BeginNegatedMask",
        "Clamp",
        "Convert",
        "Count",
        "CountBy",
        "EltwiseOperation",
        "EndMask",
        "Fraction",
        "GeoMean",
        "GroupBy",
        "GroupColumnsBy",
        "GroupRowsBy",
        "IfMissing",
        "IfNot",
        "IsEqual",
        "IsGreater",
        "IsGreaterEqual",
        "IsLess",
        "IsLessEqual",
        "IsMatch",
        "IsNotEqual",
        "IsNotMatch",
        "Log",
        "LookupMatrix",
        "LookupScalar",
        "LookupVector",
        "Max",
        "Mean",
        "Median",
        "Min",
        "Mode",
        "Names",
        "OrMask",
        "OrNegatedMask",
        "Parameter",
        "Quantile",
        "QueryOperation",
        "QuerySequence",
        "ReduceToColumn",
        "ReduceToRow",
        "ReductionOperation",
        "Round",
        "Significant",
        "SquareColumnIs",
        "SquareRowIs",
        "Std",
        "StdN",
        "Sum",
        "Var",
        "VarN",
        "XorMask",
        "XorNegatedMask",
        "escape_value",
        "is_axis_query",
        "parse_query",
        "query_axis_name",
        "query_requires_relayout",
        "query_result_dimensions",
        "register_eltwise",
        "register_reduction",
        "unescape_value",
    },
    "dafzarr.errors": {
        "AddressSpaceError",
        "AlreadyOpenError",
        "AnnDataConversionError",
        "AppendOnlyError",
        "ArchiveFullError",
        "ArchiveInUseError",
        "ArchiveLockedError",
        "ArgumentError",
        "ArrayExistsError",
        "ArrayNotFoundError",
        "AttributeLossWarning",
        "BatchOpenError",
        "ClosedError",
        "CorruptArchiveError",
        "CorruptArrayFileError",
        "CorruptDafError",
        "CorruptDataError",
        "CorruptFooterError",
        "DafContractError",
        "DafExistsError",
        "DafFormatError",
        "DafMismatchError",
        "DafMissingEntryError",
        "DafMissingError",
        "DafNotFoundError",
        "DafQueryError",
        "DafQueryParameterError",
        "DafQuerySyntaxError",
        "DafReadOnlyError",
        "DafzarrError",
        "DafzarrWarning",
        "EntryExistsError",
        "EntryNotFoundError",
        "FormatLimitError",
        "H5Error",
        "HttpDeadlineError",
        "HttpReadError",
        "IOFailureError",
        "IncompatibleSourcesError",
        "InvalidArgumentError",
        "InvalidArgumentTypeError",
        "MissingFileError",
        "NotFoundError",
        "OutOfBoundsError",
        "OutputExistsError",
        "PackSourceError",
        "RecoveryWarning",
        "RefusedEntryWarning",
        "RkyvError",
        "ScanTimeoutError",
        "SelfCheckError",
        "StateError",
        "StatisticsWarning",
        "StorageIOError",
        "StorageLockError",
        "TruncatedDataError",
        "UnsafeCastError",
        "UnsafeEntryNameError",
        "UnstableFileSetError",
        "UnsupportedElementTypeError",
        "UnsupportedEntryError",
        "UnsupportedError",
        "UnsupportedDafError",
        "UnsupportedHDF5Error",
        "UnsupportedVariableWarning",
        "VariableLeftOutWarning",
    },
    "dafzarr.refs": {
        "HIDDEN_ATTRIBUTES",
        "PLACEMENT_SCHEMA",
        "REFS_SCHEMA",
        "ReferenceWriter",
        "ScanResult",
        "Variable",
        "VirtualArray",
        "VirtualDataset",
        "as_virtual",
        "compose",
        "mosaic_sources",
        "place",
        "scan",
        "scan_many",
        "to_icechunk",
        "to_kerchunk_json",
        "virtualize",
        "write_parquet",
    },
    "dafzarr.zipstore": {
        "ArchiveSpace",
        "MmapZipStore",
    },
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_import_without_warnings(module: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod = importlib.import_module(module)
        missing = sorted(n for n in PUBLIC[module] if not hasattr(mod, n))
    assert not missing, f"{module} lost public names: {missing}"
    assert set(mod.__all__) >= PUBLIC[module]


def test_every_public_module_is_listed() -> None:
    """A new public module joins the table, so that its names are kept from then on."""
    found = {
        m.name
        for m in pkgutil.walk_packages(dafzarr.__path__, "dafzarr.")
        if not any(p.startswith("_") for p in m.name.split(".")[1:])
    }
    assert found <= set(PUBLIC), f"public modules missing from the table: {found - set(PUBLIC)}"


def test_the_error_table_lists_every_exception_with_its_builtin() -> None:
    """``docs/errors.rst`` has one row per class of :mod:`dafzarr.errors`, naming the built-in
    class an ``except`` clause unaware of dafzarr would catch it as."""
    doc = ROOT / "docs" / "errors.rst"
    if not doc.exists():
        pytest.skip("the docs are not beside the tests")
    text = doc.read_text()
    rows = dict(re.findall(r"\* - :class:`~dafzarr\.errors\.(\w+)`\n\s+- ``(\w+)``", text))
    assert sorted(rows) == sorted(errors.__all__)
    for name, builtin in rows.items():
        cls = getattr(errors, name)
        assert issubclass(cls, getattr(builtins, builtin)), (name, builtin)
        assert issubclass(cls, (errors.DafzarrError, Warning)), name


def test_importing_the_package_leaves_the_daf_layer_for_first_use() -> None:
    """A process that opens ZIP stores only does not load the Daf layer and scipy (16 MB
    and 0.3 s); the names still import from the package root."""
    code = """
import sys
import dafzarr
from dafzarr import MmapZipStore
assert "scipy" not in sys.modules and "dafzarr.daf" not in sys.modules, "loaded at import"
assert "open_daf" in dir(dafzarr)
from dafzarr import open_daf
assert open_daf is dafzarr.daf.open_daf and dafzarr.ArrayFile is dafzarr.arrayfile.ArrayFile
try:
    dafzarr.no_such_name
except AttributeError as exc:
    assert "no_such_name" in str(exc)
else:
    raise AssertionError("no AttributeError")
"""
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
