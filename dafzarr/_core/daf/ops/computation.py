"""The :func:`computation` decorator: a function on Daf data held to its contracts.

``@computation(Contract(...))`` wraps a function whose first parameter is a data set (after
``self`` or ``cls`` for a method; or, with ``Contract(name="other", ...)``, whose parameter
``other`` is): each call wraps the data set with :func:`~dafzarr.daf.ops.contractor`,
checks the inputs, runs the function on the wrapper, and checks the outputs (see
:class:`~dafzarr.daf.ops.ContractDaf`). A function of several data sets takes one contract
per data set (at most one of them unnamed). A parameter ``overwrite`` of the function (its
value, or its default) is passed on to the contractor, so that created outputs may
pre-exist when it is true.

The contracts also document the function: their ``Inputs`` and ``Outputs`` sections replace
the placeholders ``{CONTRACT}`` (one contract) or ``{CONTRACT1}``, ``{CONTRACT2}``, ... in
its docstring, or are appended to it when it has none. The contracts stay available as the
function's ``contracts`` attribute (a tuple), e.g. to combine the contracts of successive
steps with ``>>``.

Enforcement is on by default: the checks read metadata only (names, element types from the
stored metadata) plus a dictionary lookup per access, about 0.15 ms per call on a ZIP data
set (``benchmarks/bench_reconstruct.py``), small next to any computation that reads data. Setting the environment variable ``DAFZARR_ENFORCE_CONTRACTS`` to ``0``
(or ``false``, ``no``, ``off``) turns it off, for all calls made from then on: the function
then runs on the data set as given. DataAxesFormats.jl's ``DAF_ENFORCE_CONTRACTS`` is off by
default; dafzarr prefers the safe default, since an unchecked contract is only documentation.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ....errors import InvalidArgumentError, InvalidArgumentTypeError
from .contract import Contract
from .contractor import ContractDaf, contractor

__all__ = ["ENFORCE_VARIABLE", "computation", "enforcing_contracts"]

F = TypeVar("F", bound=Callable[..., Any])

#: The environment variable that turns the checks of :func:`computation` off (``0``).
ENFORCE_VARIABLE = "DAFZARR_ENFORCE_CONTRACTS"
_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")
_PLACEHOLDER = re.compile(r"\{CONTRACT(\d*)\}")


def enforcing_contracts() -> bool:
    """Whether :func:`computation` checks contracts now (``DAFZARR_ENFORCE_CONTRACTS``,
    default on)."""
    text = os.environ.get(ENFORCE_VARIABLE, "").strip().lower()
    if text in ("", *_ON):
        return True
    if text in _OFF:
        return False
    raise InvalidArgumentError(
        f"invalid value of {ENFORCE_VARIABLE}: {text!r} (one of {', '.join(_ON + _OFF)})"
    )


def computation(*contracts: Contract) -> Callable[[F], F]:
    """Decorate a function on Daf data with its contracts (one per data set parameter).

    Parameters
    ----------
    *contracts : Contract
        One :class:`~dafzarr.daf.ops.Contract` per data set the function takes; an unnamed
        contract applies to the first parameter, ``Contract(name="p", ...)`` to parameter
        ``p``.

    Returns
    -------
    callable
        A decorator. The decorated function checks its inputs before and its outputs after
        each call (raising :class:`~dafzarr.errors.DafContractError`), runs on contract
        wrappers of its data sets, and documents the contracts in its docstring.

    Raises
    ------
    InvalidArgumentTypeError
        A contract is no :class:`~dafzarr.daf.ops.Contract`; when called, a non-bool
        ``overwrite`` argument.
    InvalidArgumentError
        Several unnamed contracts; when decorating, a function without the contract's
        parameter (``missing daf parameter: ...``) or a ``{CONTRACTn}`` placeholder
        without its contract; when called, an invalid ``DAFZARR_ENFORCE_CONTRACTS``.
    DafContractError
        When called, a broken contract: a missing input, a pre-existing created output,
        an unexpected element type, an access to what the contract does not list, a
        missing output or an unused required input (see
        :class:`~dafzarr.daf.ops.ContractDaf`).

    Examples
    --------
    >>> @dafzarr.computation(dafzarr.Contract(
    ...     axes={"cell": (dafzarr.RequiredInput, "The cells.")},
    ...     data={("cell", "age"): (dafzarr.RequiredInput, "integer", "Their ages."),
    ...           "oldest": (dafzarr.CreatedOutput, "integer", "The oldest age.")}))
    ... def oldest(daf, *, overwrite=False):
    ...     '''Store the oldest age.
    ...
    ...     {CONTRACT}
    ...     '''
    ...     daf.set_scalar("oldest", daf.get_np_vector("cell", "age").max(), overwrite=overwrite)
    >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
    >>> oldest(daf.set_vector("cell", "age", [30, 40]))
    >>> int(daf.get_scalar("oldest"))
    40
    >>> oldest(daf)
    Traceback (most recent call last):
    ...
    dafzarr.errors.DafContractError: pre-existing CreatedOutput scalar: oldest
    ...
    >>> print(oldest.__doc__.split("Outputs")[1])
    <BLANKLINE>
    -------
    Scalars
        oldest : integer (created)
            The oldest age.
    """
    for contract in contracts:
        if not isinstance(contract, Contract):
            raise InvalidArgumentTypeError(f"not a Contract: {contract!r}")
    if sum(c.name is None for c in contracts) > 1:
        raise InvalidArgumentError(
            "at most one contract can be for the unnamed (first) "
            "parameter; name the others (Contract(name=...))"
        )

    def decorate(func: F) -> F:
        full_name = f"{func.__module__}.{func.__qualname__}"
        signature = inspect.signature(func)
        targets = _targets(contracts, signature, full_name)

        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            if not enforcing_contracts():
                return func(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            overwrite = _overwrite(signature, bound, full_name)
            wrapped: list[ContractDaf] = []
            for contract, parameter in targets:
                if parameter not in bound.arguments:
                    raise InvalidArgumentError(
                        f"missing daf parameter: {parameter}\nfor the computation: {full_name}"
                    )
                proxy = contractor(
                    full_name, contract, bound.arguments[parameter], overwrite=overwrite
                )
                bound.arguments[parameter] = proxy
                wrapped.append(proxy)
            for proxy in wrapped:
                proxy.verify_input()
            result = func(*bound.args, **bound.kwargs)
            for proxy in wrapped:
                proxy.verify_output()
            return result

        run.__doc__ = _documented(func.__doc__, targets, full_name)
        run.contracts = tuple(contracts)  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return decorate


def _targets(
    contracts: tuple[Contract, ...], signature: inspect.Signature, full_name: str
) -> list[tuple[Contract, str]]:
    """Each contract with the name of the parameter holding its data set."""
    parameters = [
        p for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if parameters and parameters[0].name in ("self", "cls"):  # a method: its data set next
        parameters = parameters[1:]
    targets = []
    for contract in contracts:
        if contract.name is None:
            if not parameters or parameters[0].kind is inspect.Parameter.KEYWORD_ONLY:
                raise InvalidArgumentError(
                    f"no first parameter for the data set\nof the computation: {full_name}"
                )
            targets.append((contract, parameters[0].name))
        elif contract.name in {p.name for p in parameters}:
            targets.append((contract, contract.name))
        else:
            raise InvalidArgumentError(
                f"missing daf parameter: {contract.name}\nof the computation: {full_name}"
            )
    names = [t[1] for t in targets]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(
            f"several contracts for one parameter: {names}\nof the computation: {full_name}"
        )
    return targets


def _overwrite(signature: inspect.Signature, bound: inspect.BoundArguments, full_name: str) -> bool:
    parameter = signature.parameters.get("overwrite")
    if parameter is None:
        return False
    value = bound.arguments.get("overwrite", parameter.default)
    if value is inspect.Parameter.empty:
        return False
    if not isinstance(value, bool | np.bool_):
        raise InvalidArgumentTypeError(
            f"non-bool overwrite parameter: {value!r}\nof the computation: {full_name}"
        )
    return bool(value)


def _documented(doc: str | None, targets: list[tuple[Contract, str]], full_name: str) -> str:
    """The docstring with the contracts' sections in place of the placeholders (or after)."""
    text = inspect.cleandoc(doc) if doc else ""
    many = len(targets) > 1
    sections = [c.documentation(title=p if many else "") for c, p in targets]

    def section(match: re.Match[str]) -> str:
        index = int(match.group(1) or "1")
        if match.group(1) == "" and many:
            raise InvalidArgumentError(
                f"ambiguous {{CONTRACT}} in the docstring of: "
                f"{full_name}\nuse {{CONTRACT1}} .. "
                f"{{CONTRACT{len(targets)}}}"
            )
        if not 1 <= index <= len(sections):
            raise InvalidArgumentError(
                f"no contract #{index} associated with: {full_name}\n"
                f"use: @computation(Contract(...), ...) with "
                f"{index} contracts"
            )
        return sections[index - 1]

    if _PLACEHOLDER.search(text):
        return _PLACEHOLDER.sub(section, text)
    return "\n\n".join(part for part in (text, *sections) if part)
