"""The public reader API of a Daf data set, as a ``Protocol``: anything that has these
methods (:class:`~dafzarr.daf.ZarrDaf`, views, chains) is read alike by the query package,
:func:`~dafzarr.anndata.daf_to_anndata` and the xarray exports."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..aliases import Array
from .storage import UNDEF

__all__ = ["DafReader"]


@runtime_checkable
class DafReader(Protocol):
    """The public reader API of a Daf data set (``ZarrDaf``, views and chains)."""

    @property
    def name(self) -> str:
        """The data set's name."""

    def has_scalar(self, name: str) -> bool:
        """Whether the scalar exists."""

    def scalars_set(self) -> set[str]:
        """The names of all scalars."""

    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        """The scalar's value; ``default`` if it is missing."""

    def has_axis(self, axis: str) -> bool:
        """Whether the axis exists."""

    def axes_set(self) -> set[str]:
        """The names of all axes."""

    def axis_length(self, axis: str) -> int:
        """The number of entries of an axis."""

    def axis_np_entries(self, axis: str) -> Array:
        """The axis' entry names, in order."""

    def has_vector(self, axis: str, name: str) -> bool:
        """Whether the vector exists (``name`` and ``index`` always do)."""

    def vectors_set(self, axis: str) -> set[str]:
        """The names of the vectors of an axis."""

    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Array:
        """The vector as a numpy array."""

    def has_matrix(self, rows_axis: str, columns_axis: str, name: str, *,
                   relayout: bool = True) -> bool:
        """Whether the matrix exists (with ``relayout``, in either layout)."""

    def matrices_set(self, rows_axis: str, columns_axis: str, *,
                     relayout: bool = True) -> set[str]:
        """The names of the matrices of an axis pair."""

    def get_np_matrix(self, rows_axis: str, columns_axis: str, name: str, *,
                      default: Any = UNDEF, relayout: bool = True,
                      sparse_class: Any = "csc_matrix") -> Any:
        """The ``rows_axis x columns_axis`` matrix (numpy, column-major, or scipy CSC)."""

    def description(self) -> str:
        """A human-readable summary of the data set."""

    def _data_version(self) -> Any:
        """What changes whenever the data set changes (the query cache follows it)."""
