"""What a :class:`~dafzarr.daf.ops.ContractDaf` method adds to the docstring of the Daf
API method it implements (written once, in :mod:`..interface`): whether the call is a
contract access, and the :class:`~dafzarr.errors.DafContractError` it may raise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...documented import Documented, documented_by

__all__ = ["contract_listing", "contract_read", "contract_write", "describe_wrapped"]

_LISTING = """
Always allowed, not a contract access: the answer is the wrapped data set's, listed in the
contract or not.
"""
_READ = """
A contract access: the axes and the property read are marked used (the ``name`` and
``index`` vectors of a listed axis are always allowed).
"""
_WRITE = """
A contract access: the axis or property written must be an output of the contract, and is
marked used.
"""
_EXPANDS = """
The tensors of the contract along the new axis are expanded to its entries.
"""
_OTHER_LAYOUT = """
A contract access: the ``columns_axis x rows_axis`` matrix must be an output of the
contract, and is marked used.
"""
_NOT_LISTED = """
DafContractError
    The contract does not list the axis or property (``accessing non-contract ...``) and
    is not relaxed.
"""
_NOT_OUTPUT = """
DafContractError
    The contract does not list the axis or property (and is not relaxed), or lists it as
    an input (``modifying RequiredInput ...``).
"""


def contract_listing(source: Callable[..., Any]) -> Callable[[Documented], Documented]:
    """The docstring of ``source`` for an existence check or listing of a ``ContractDaf``."""
    return documented_by(source, notes=_LISTING)


def contract_read(source: Callable[..., Any]) -> Callable[[Documented], Documented]:
    """The docstring of ``source`` for a read of a ``ContractDaf``."""
    return documented_by(source, notes=_READ, raises=_NOT_LISTED)


def contract_write(
    source: Callable[..., Any], *, expands: bool = False, other_layout: bool = False
) -> Callable[[Documented], Documented]:
    """The docstring of ``source`` for a write of a ``ContractDaf`` (``expands``: it makes
    an axis; ``other_layout``: it writes the other layout of a matrix)."""
    notes = _OTHER_LAYOUT if other_layout else _WRITE + (_EXPANDS if expands else "")
    return documented_by(source, notes=notes, raises=_NOT_OUTPUT)


def describe_wrapped(source: Callable[..., Any]) -> Callable[[Documented], Documented]:
    """The docstring of ``source`` for the description of a ``ContractDaf``."""
    return documented_by(
        source, notes="The wrapped data set's description (``describe`` is the same method)."
    )
