"""The lexer of Daf queries: value and operator tokens, ``escape_value`` and ``unescape_value``.

A query is a sequence of tokens separated by optional white space and ``#`` comments. At each
position the lexer tries, in order: ``''`` (a value token holding the empty string), the
longest operator, then a value: a maximal run of ``A-Z a-z 0-9 _ . + -``, of characters above
U+00FF and of escaped characters (``\\X`` makes any ``X`` a value character). Operators win at a
token start, so ``.5`` is ``.`` then ``5`` and ``>-1`` is ``>-`` then ``1``.

Decisions (DataAxesFormats.jl 0.2/0.3 syntax):

* ``&!``, ``|!`` and ``^!`` are refused with a message asking for a space (``& !``); the
  anchor's lexer matches them as tokens no operation accepts.
* Latin-1 letters (U+0080 to U+00FF) are not value characters, as in the anchor's lexer, and
  :func:`escape_value` escapes them (the anchor leaves them bare, which its own lexer rejects),
  so every escaped name reads back as itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....errors import DafQuerySyntaxError, InvalidArgumentTypeError

__all__ = ["OPERATORS", "Token", "escape_value", "syntax_error", "tokenize", "unescape_value"]

#: Every operator, two-character forms first (the lexer takes the longest match).
OPERATORS: tuple[str, ...] = (
    "!=",
    "<=",
    ">=",
    "!~",
    "-/",
    "|/",
    "??",
    "@-",
    "@|",
    "=@",
    "::",
    ">-",
    ">>",
    ">|",
    "||",
    "!",
    "&",
    "*",
    "%",
    ".",
    "/",
    ":",
    "<",
    "=",
    ">",
    "?",
    "@",
    "[",
    "]",
    "^",
    "|",
    "~",
)
_TWO = frozenset(op for op in OPERATORS if len(op) == 2)
_ONE = frozenset(op for op in OPERATORS if len(op) == 1)
_GLUED_NEGATIONS = ("&!", "|!", "^!")
_SPACE = " \t\r\n"


def _is_value_char(c: str) -> bool:
    return (c.isascii() and (c.isalnum() or c in "_.+-")) or ord(c) > 0xFF


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``is_operator``, its ``text`` (a value's text with escapes resolved) and the
    ``start``/``end`` character offsets of its source in the query."""

    is_operator: bool
    text: str
    start: int
    end: int


def syntax_error(message: str, query: str, start: int, end: int) -> DafQuerySyntaxError:
    """A parse error: ``message``, then ``in: <query>`` and a caret line under ``[start, end)``."""
    shown = "".join(" " if c in "\t\r\n" else c for c in query)
    width = max(end - start, 1)
    return DafQuerySyntaxError(f"{message}\nin: {shown}\nat: {' ' * start}{'▲' * width}")


def tokenize(query: str) -> list[Token]:
    """The tokens of ``query``; raises :class:`~dafzarr.errors.DafQuerySyntaxError` on a
    character that is neither white space, a comment, an operator nor part of a value."""
    tokens: list[Token] = []
    i, n = 0, len(query)
    while i < n:
        c = query[i]
        if c in _SPACE:
            i += 1
            continue
        if c == "#":
            while i < n and query[i] != "\n":
                i += 1
            continue
        if query.startswith("''", i):
            tokens.append(Token(False, "", i, i + 2))
            i += 2
            continue
        pair = query[i : i + 2]
        if pair in _GLUED_NEGATIONS:
            raise syntax_error(
                f"unexpected operator: {pair}\n(write '{pair[0]} !' with a space)", query, i, i + 2
            )
        if pair in _TWO or c in _ONE:
            op = pair if pair in _TWO else c
            tokens.append(Token(True, op, i, i + len(op)))
            i += len(op)
            continue
        start = i
        chars: list[str] = []
        while i < n:
            c = query[i]
            if c == "\\" and i + 1 < n:
                chars.append(query[i + 1])
                i += 2
            elif _is_value_char(c):
                chars.append(c)
                i += 1
            else:
                break
        if i == start:
            raise syntax_error(f"unexpected character: {query[i]!r}", query, i, i + 1)
        tokens.append(Token(False, "".join(chars), start, i))
    return tokens


def escape_value(value: str) -> str:
    """``value`` as one value token of a query text.

    ``''`` for the empty string, otherwise every character that is not a value character
    prefixed with a backslash (and a leading ``.``, which would read as the operator).

    Parameters
    ----------
    value : str
        A name or value.

    Returns
    -------
    str
        The escaped value, which the parser reads back as ``value``.

    Raises
    ------
    InvalidArgumentTypeError
        If ``value`` is not a ``str``.

    Examples
    --------
    >>> print(dafzarr.escape_value("my cell"))
    my\\ cell
    >>> dafzarr.escape_value("")
    "''"
    >>> str(dafzarr.parse_query("@ " + dafzarr.escape_value("my cell")))
    '@ my\\\\ cell'
    """
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"a query value is a str, not {type(value).__name__}")
    if value == "":
        return "''"
    escaped = "".join(c if _is_value_char(c) else "\\" + c for c in value)
    return "\\" + escaped if value[0] == "." else escaped


def unescape_value(escaped: str) -> str:
    """The inverse of :func:`escape_value`: ``''`` is the empty string, ``\\X`` is ``X``.

    Parameters
    ----------
    escaped : str
        A value token of a query text.

    Returns
    -------
    str
        The value it stands for.

    Raises
    ------
    InvalidArgumentTypeError
        If ``escaped`` is not a ``str``.

    Examples
    --------
    >>> print(dafzarr.unescape_value(dafzarr.escape_value("my cell")))
    my cell
    >>> dafzarr.unescape_value("''")
    ''
    """
    if not isinstance(escaped, str):
        raise InvalidArgumentTypeError(f"a query value is a str, not {type(escaped).__name__}")
    if escaped == "''":
        return ""
    out: list[str] = []
    i = 0
    while i < len(escaped):
        if escaped[i] == "\\" and i + 1 < len(escaped):
            i += 1
        out.append(escaped[i])
        i += 1
    return "".join(out)
