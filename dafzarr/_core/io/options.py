"""How patient and how trusting reads over HTTP(S) and object stores are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ...errors import InvalidArgumentError

__all__ = ["HttpOptions"]


@dataclass(frozen=True)
class HttpOptions:
    """How patient and how trusting reads over HTTP(S) are.

    The timeouts and retries are carried out by obstore's HTTP client (its ``client_options``
    and ``retry_config``); the deadline and the limits are enforced by dafzarr around it.

    Parameters
    ----------
    deadline
        Seconds one read may take in all: connecting, every retry and wait, the whole body.
        When it passes, :class:`~dafzarr.HttpDeadlineError` is raised; the request left
        behind stops at its next chunk of body, or at obstore's timeouts.
    connect_timeout
        Seconds to wait for one connection (obstore's ``connect_timeout``).
    read_timeout
        Seconds to wait for the next bytes from the server (obstore's ``read_timeout``); a
        stalled try is retried, within the deadline.
    attempts
        Tries of one request, the first included, before a transient failure is final
        (obstore's ``max_retries`` is ``attempts - 1``). Transient failures are answers ``429``
        and ``5xx``, refused or dropped connections and timeouts (retried by obstore), and
        bodies cut short (retried by dafzarr).
    backoff
        Seconds to wait before the first retry; then waits grow about twofold, with jitter
        (obstore's ``init_backoff``, ``base=2``). A server's ``Retry-After`` is not consulted.
    max_wait
        The longest single wait between tries (obstore's ``max_backoff``).
    max_skip
        The most bytes read from a server that answers a ranged GET with the whole object.
    max_body
        The largest body a whole-object GET accepts (chunks of arrays read through zarr).

    Raises
    ------
    InvalidArgumentError
        A timeout or the deadline is not positive, ``attempts`` is below 1, or ``backoff``
        or ``max_wait`` is negative.

    Examples
    --------
    >>> options = dafzarr.HttpOptions(deadline=60.0, attempts=3)
    >>> options.retry_config()["max_retries"]
    2
    """

    deadline: float = 300.0
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    attempts: int = 5
    backoff: float = 0.25
    max_wait: float = 10.0
    max_skip: int = 64 << 20
    max_body: int = 2 << 30

    def __post_init__(self) -> None:
        for name in ("deadline", "connect_timeout", "read_timeout"):
            if not getattr(self, name) > 0:
                raise InvalidArgumentError(
                    f"HttpOptions.{name} must be positive, not {getattr(self, name)!r}"
                )
        if self.attempts < 1:
            raise InvalidArgumentError(
                f"HttpOptions.attempts must be at least 1, not {self.attempts!r}"
            )
        if self.backoff < 0 or self.max_wait < 0:
            raise InvalidArgumentError("HttpOptions.backoff and max_wait must not be negative")

    def client_options(self) -> dict[str, Any]:
        """obstore ``client_options`` for these options (plain ``http://`` allowed).

        Returns
        -------
        dict
            ``allow_http``, ``connect_timeout``, ``read_timeout`` and ``timeout`` (the
            deadline plus a second, a backstop), for an obstore store's ``client_options``.

        Raises
        ------
        None
            The options were checked when they were made.

        Examples
        --------
        >>> dafzarr.HttpOptions(connect_timeout=5.0).client_options()["connect_timeout"]
        datetime.timedelta(seconds=5)
        """
        return {
            "allow_http": True,
            "connect_timeout": timedelta(seconds=self.connect_timeout),
            "read_timeout": timedelta(seconds=self.read_timeout),
            # A backstop only: the deadline itself is enforced around the whole read, and a
            # request left behind ends by this timeout (or read_timeout) at the latest.
            "timeout": timedelta(seconds=self.deadline + 1),
        }

    def retry_config(self) -> dict[str, Any]:
        """obstore ``retry_config`` for these options.

        Returns
        -------
        dict
            ``max_retries`` (``attempts - 1``), ``retry_timeout`` (the deadline) and
            ``backoff`` (``init_backoff``, ``max_backoff``, ``base``), for an obstore
            store's ``retry_config``.

        Raises
        ------
        None
            The options were checked when they were made.

        Examples
        --------
        >>> config = dafzarr.HttpOptions(attempts=4, backoff=0.5).retry_config()
        >>> config["max_retries"], config["backoff"]["init_backoff"].total_seconds()
        (3, 0.5)
        """
        return {
            "max_retries": self.attempts - 1,
            "retry_timeout": timedelta(seconds=self.deadline),
            "backoff": {
                "init_backoff": timedelta(seconds=min(self.backoff, self.max_wait)),
                "max_backoff": timedelta(seconds=self.max_wait),
                "base": 2,
            },
        }
