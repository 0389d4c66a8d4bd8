"""How a :class:`~dafzarr.daf.ops.ContractDaf` holds each access to the contract: the
expectation of every listed axis and property, whether it was used, and the refusals
(``accessing non-contract ...``, ``modifying RequiredInput ...``) of the accesses the contract
does not allow. The reader and writer methods built on it are in ``contract_reads`` and
``contract_writes``; the verification before and after a computation in ``contractor``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....errors import DafContractError
from ..names import unique_name
from ..queries import Queries
from ..query.cache import QueryCache
from .contract import (
    Contract,
    ContractExpectation,
    CreatedOutput,
    ElementType,
    GuaranteedOutput,
    OptionalInput,
    OptionalOutput,
    RequiredInput,
    key_kind,
)

__all__ = ["ContractAccess", "Tracker"]


@dataclass
class Tracker:
    """The contract's expectation of one axis or property, and whether it was used."""

    expectation: ContractExpectation
    type: ElementType | None = None
    accessed: bool = False
    main_axis: str | None = None


def _compatible_axis(data: ContractExpectation, axis: ContractExpectation) -> bool:
    """Whether a property of expectation ``data`` may lie on an axis of expectation ``axis``."""
    if data in (OptionalInput, OptionalOutput):
        return True
    if data is RequiredInput:
        return axis is RequiredInput
    return axis in (RequiredInput, CreatedOutput, GuaranteedOutput)


class ContractAccess(Queries):
    """The state of a contract wrapper and its access checks (the base of
    :class:`~dafzarr.daf.ops.ContractDaf`)."""

    def __init__(
        self,
        computation: str,
        contract: Contract,
        daf: Any,
        *,
        name: str | None = None,
        overwrite: bool = False,
    ) -> None:
        self._daf = daf
        self._computation = computation
        self._relaxed = contract.is_relaxed
        self._overwrite = bool(overwrite)
        base = daf.name if name is None else name
        self._name = unique_name(f"{base}.for.{computation.split('.')[-1]}")
        self._query_cache = QueryCache()
        self._axes = {axis: Tracker(spec.expectation) for axis, spec in contract.axes}
        self._data: dict[Any, Tracker] = {}
        for key, dspec in contract.data:
            self._data[key] = Tracker(dspec.expectation, dspec.type)
            self._check_axes(key, dspec.expectation)
        for key in [k for k in self._data if key_kind(k) == "tensor"]:
            if daf.has_axis(key[0]):
                self._expand(key)

    # --- Identity ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The wrapper's name: ``<data set>.for.<computation>``."""
        return self._name

    @property
    def daf(self) -> Any:
        """The wrapped data set."""
        return self._daf

    @property
    def computation(self) -> str:
        """The computation's name."""
        return self._computation

    @property
    def read_only(self) -> bool:
        """Whether the wrapped data set's writers raise."""
        return bool(getattr(self._daf, "read_only", True))

    def __repr__(self) -> str:
        return f"Contract {type(self._daf).__name__} {self._name}"

    def _data_version(self) -> Any:
        return self._daf._data_version()

    # --- Checks of the contract ----------------------------------------------------------------

    def _where(self) -> str:
        return f"for the computation: {self._computation}\non the daf data: {self._daf.name}"

    def _check_axes(self, key: Any, expectation: ContractExpectation) -> None:
        kind = key_kind(key)
        if kind == "scalar":
            return
        what = f"{expectation} {kind}: {key[-1]}"
        if kind == "vector":
            needs = [(key[0], f"for the {what}")]
        elif kind == "matrix":
            needs = [
                (key[0], f"for the rows of the {what}\nwith the columns axis: {key[1]}"),
                (key[1], f"for the columns of the {what}\nwith the rows axis: {key[0]}"),
            ]
        else:
            main = f"{what}\nwith the rows axis: {key[1]}\nand the columns axis: {key[2]}"
            rows = f"{what}\nwith the main axis: {key[0]}\nand the columns axis: {key[2]}"
            columns = f"{what}\nwith the main axis: {key[0]}\nand the rows axis: {key[1]}"
            needs = [
                (key[0], f"for the main of the {main}"),
                (key[1], f"for the rows of the {rows}"),
                (key[2], f"for the columns of the {columns}"),
            ]
        for axis, what_for in needs:
            tracker = self._axes.get(axis)
            if tracker is None:
                raise DafContractError(f"non-contract axis: {axis}\n{what_for}\n{self._where()}")
            if not _compatible_axis(expectation, tracker.expectation):
                raise DafContractError(
                    f"incompatible {tracker.expectation} axis: {axis}\n{what_for}\n{self._where()}"
                )

    def _expand(self, key: tuple[str, ...]) -> None:
        """Replace a tensor key by the matrix keys of its main axis' entries."""
        main, rows, columns, name = key
        tracker = self._data.pop(key)
        tracker.main_axis = main
        for entry in self._daf.axis_np_entries(main):
            self._data[(rows, columns, f"{entry}_{name}")] = tracker

    def _refuse(self, tracker: Tracker | None, modify: bool, what: str) -> bool:
        """Whether the access is allowed untracked (relaxed); raise if it is not allowed."""
        if tracker is None:
            if self._relaxed:
                return True
            raise DafContractError(f"accessing non-contract {what}\n{self._where()}")
        if modify and tracker.expectation.is_input:
            raise DafContractError(f"modifying {tracker.expectation} {what}\n{self._where()}")
        tracker.accessed = True
        return False

    def _scalar_access(self, name: str, modify: bool = False) -> None:
        self._refuse(self._data.get(name), modify, f"scalar: {name}")

    def _axis_access(self, axis: str, modify: bool = False) -> None:
        self._refuse(self._axes.get(axis), modify, f"axis: {axis}")

    def _vector_access(self, axis: str, name: str, modify: bool = False) -> None:
        self._axis_access(axis)
        tracker = self._data.get((axis, name))
        if tracker is None and name in ("name", "index"):
            return
        self._refuse(tracker, modify, f"vector: {name}\nof the axis: {axis}")

    def _matrix_access(
        self, rows_axis: str, columns_axis: str, name: str, modify: bool = False
    ) -> None:
        self._axis_access(rows_axis)
        self._axis_access(columns_axis)
        tracker = self._data.get((rows_axis, columns_axis, name))
        if tracker is None:
            tracker = self._data.get((columns_axis, rows_axis, name))
        what = (
            f"matrix: {name}\nof the rows axis: {rows_axis}\nand the columns axis: {columns_axis}"
        )
        if (
            not self._refuse(tracker, modify, what)
            and tracker is not None
            and tracker.main_axis is not None
        ):
            self._axis_access(tracker.main_axis)
