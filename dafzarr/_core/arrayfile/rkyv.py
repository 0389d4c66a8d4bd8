"""A schema-driven codec for rkyv 0.8's archived layout (little-endian, aligned, 64-bit pointers).

Each archived type is described by a small object that knows its size and alignment, how to
decode itself at a position of a payload (bounds-checked: a hostile payload raises
:class:`RkyvError`, never reads out of range or recurses without end), and how to encode itself
in rkyv's serializer order:

* the serializer is post-order and follows field declaration order: for a struct (or an enum
  variant) the *dependencies* of every field are written first, in order; then the parent
  writes the value itself, aligned, once everything it points to has a position;
* a ``Vec<T>`` writes the dependencies of each element, aligns to ``align(T)`` (also when it
  is empty) and writes the elements contiguously;
* a ``Box<T>`` writes the inner dependencies, aligns, then the inner value;
* a ``String`` of at most 16 bytes is stored inline (0xFF-filled); a longer one writes its bytes
  unaligned at the current position and stores ``{encoded length, offset}``;
* the root goes last, aligned to 8.

Every archived byte belongs to one value only, so the out-of-line ranges a payload's pointers
claim (vector elements, long strings' bytes, boxed values) are disjoint and add up to at most
the payload's size. The decoder charges each claim to a budget of exactly that size: pointers
that alias one another, so as to decode the same bytes many times over, are refused before the
values they claim are built. What a footer decodes to is thus bounded by a fixed multiple of its
size (the Python objects for the bytes it holds), whatever it claims.

Following that order is what makes the output byte-identical to rkyv's and acceptable to its
validator, which checks that sub-trees are laid out in exactly that order.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import RkyvError

__all__ = [
    "BOOL",
    "F32",
    "F64",
    "I8",
    "I16",
    "I32",
    "I64",
    "STRING",
    "U8",
    "U16",
    "U32",
    "U64",
    "ArchivedVec",
    "Box",
    "Bytes",
    "Decoder",
    "Encoder",
    "Enum",
    "Option",
    "Prim",
    "RkyvError",
    "Struct",
    "Type",
    "decode_root",
    "decode_root_with",
    "encode_root",
]

_MAX_DEPTH = 64


def _align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


class Decoder:
    """A payload being read: the bytes, plus bounds checks that name what was being read."""

    __slots__ = ("buf", "depth", "later", "left", "n")

    def __init__(self, buf: bytes | bytearray | memoryview) -> None:
        self.buf = memoryview(buf).cast("B")
        self.n = len(self.buf)
        self.depth = 0
        self.left = self.n  # bytes that out-of-line claims may still take (see the module doc)
        # values whose contents a type fills in one pass once the whole payload is read
        self.later: list[Any] = []

    def charge(self, size: int, what: str) -> None:
        """Count ``size`` out-of-line bytes against the payload's size; refuse aliasing."""
        if size > self.left:
            raise RkyvError(
                f"{what}: the payload's pointers claim more than its {self.n} bytes (they "
                "alias one another)"
            )
        self.left -= size

    def check(self, pos: int, size: int, align: int, what: str) -> None:
        if pos >= 0 and size >= 0 and pos + size <= self.n and not pos % align:
            return
        if pos < 0 or size < 0 or pos + size > self.n:
            raise RkyvError(
                f"{what}: range [{pos}, {pos + size}) lies outside the {self.n}-byte payload"
            )
        if pos % align:
            raise RkyvError(f"{what}: position {pos} is not aligned to {align}")

    def target(self, pos: int, what: str) -> int:
        """Absolute position of a relative pointer stored at ``pos``."""
        (off,) = struct.unpack_from("<q", self.buf, pos)
        return int(pos + off)


class Encoder:
    """A payload being written, in rkyv's serializer order."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    @property
    def pos(self) -> int:
        return len(self.out)

    def pad(self, align: int) -> None:
        n = len(self.out)
        m = _align_up(n, align)
        if m != n:
            self.out += bytes(m - n)

    def reserve(self, size: int) -> int:
        """Append ``size`` zero bytes and return where they start."""
        pos = len(self.out)
        self.out += bytes(size)
        return pos


class Type:
    """An archived type: ``size``/``align`` plus ``read``, ``deps`` and ``write``."""

    size: int
    align: int

    def read(self, dec: Decoder, pos: int) -> Any:
        raise NotImplementedError

    def deps(self, enc: Encoder, value: Any) -> Any:
        """Write what ``value`` points to; return what :meth:`write` needs to point at it."""
        return None

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        raise NotImplementedError

    def put(self, enc: Encoder, value: Any, res: Any) -> int:
        """Align, then write ``value`` itself; return its position."""
        enc.pad(self.align)
        pos = enc.reserve(self.size)
        self.write(enc, pos, value, res)
        return pos


class Prim(Type):
    """A little-endian scalar (``struct`` format without the ``<``)."""

    def __init__(self, fmt: str) -> None:
        self.fmt = "<" + fmt
        self.size = self.align = struct.calcsize(self.fmt)

    def read(self, dec: Decoder, pos: int) -> Any:
        size = self.size
        if pos < 0 or pos + size > dec.n or pos % size:  # a scalar's alignment is its size
            dec.check(pos, size, self.align, "scalar")
        return struct.unpack_from(self.fmt, dec.buf, pos)[0]

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        struct.pack_into(self.fmt, enc.out, pos, value)


class _Bool(Prim):
    def __init__(self) -> None:
        super().__init__("B")

    def read(self, dec: Decoder, pos: int) -> bool:
        v = super().read(dec, pos)
        if v > 1:
            raise RkyvError(f"bool at {pos} has the value {v}")
        return bool(v)

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        enc.out[pos] = 1 if value else 0


BOOL: Type = _Bool()
U8, U16, U32, U64 = Prim("B"), Prim("H"), Prim("I"), Prim("Q")
I8, I16, I32, I64 = Prim("b"), Prim("h"), Prim("i"), Prim("q")
F32, F64 = Prim("f"), Prim("d")


class _String(Type):
    """``ArchivedString``: inline up to 16 bytes, else ``{len_enc: u64, offset: i64}``."""

    size = 16
    align = 8
    INLINE = 16

    def read(self, dec: Decoder, pos: int) -> str:
        return self.read_bytes(dec, pos).decode("utf-8")

    def read_bytes(self, dec: Decoder, pos: int) -> bytes:
        dec.check(pos, 16, 8, "string")
        if dec.buf[pos] & 0xC0 == 0x80:
            (v,) = struct.unpack_from("<Q", dec.buf, pos)
            n = (v & 0x3F) | ((v & ~0xFF) >> 2)
            if n <= self.INLINE:
                raise RkyvError(f"out-of-line string at {pos} has the inline length {n}")
            start = pos + struct.unpack_from("<q", dec.buf, pos + 8)[0]
            dec.check(start, n, 1, "string bytes")
            dec.charge(n, f"string at {pos}")
            return bytes(dec.buf[start : start + n])
        raw = bytes(dec.buf[pos : pos + 16])
        end = raw.find(b"\xff")
        return raw if end < 0 else raw[:end]

    def deps(self, enc: Encoder, value: Any) -> Any:
        b = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        if len(b) <= self.INLINE:
            return b
        pos = enc.pos
        enc.out += b
        return (b, pos)

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        if isinstance(res, bytes):
            enc.out[pos : pos + 16] = res + b"\xff" * (16 - len(res))
        else:
            b, target = res
            n = len(b)
            enc_len = (n & 0x3F) | 0x80 | ((n & ~0x3F) << 2)
            struct.pack_into("<Qq", enc.out, pos, enc_len, target - pos)


STRING: Type = _String()


_VEC_HEAD = struct.Struct("<qQ")


class ArchivedVec(Type):
    """``Vec<T>`` / ``Box<[T]>``: ``{offset: i64, len: u64}`` pointing at contiguous elements."""

    size = 16
    align = 8

    def __init__(self, elem: Type | Callable[[], Type]) -> None:
        self._elem = elem

    @property
    def elem(self) -> Type:
        e = self._elem
        if not isinstance(e, Type):
            e = self._elem = e()
        return e

    def locate(self, dec: Decoder, pos: int) -> tuple[int, int]:
        """The (absolute start, length) of the element array."""
        dec.check(pos, 16, 8, "vector")
        off, n = _VEC_HEAD.unpack_from(dec.buf, pos)
        start = pos + off
        e = self.elem
        if n > dec.n:
            raise RkyvError(f"vector at {pos} claims {n} elements in a {dec.n}-byte payload")
        dec.check(start, n * e.size, e.align, "vector elements")
        dec.charge(n * e.size, f"vector at {pos}")
        return start, n

    def read(self, dec: Decoder, pos: int) -> Any:
        start, n = self.locate(dec, pos)
        e = self.elem
        if type(e) is Prim:  # one unpack for a vector of scalars (bounds checked by locate)
            return list(struct.unpack_from(f"<{n}{e.fmt[1:]}", dec.buf, start))
        return [e.read(dec, start + i * e.size) for i in range(n)]

    def deps(self, enc: Encoder, value: Any) -> Any:
        e = self.elem
        resolvers = [e.deps(enc, v) for v in value]
        enc.pad(e.align)
        start = enc.pos
        for v, r in zip(value, resolvers, strict=True):
            pos = enc.reserve(e.size)
            e.write(enc, pos, v, r)
        return (start, len(value))

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        start, n = res
        struct.pack_into("<qQ", enc.out, pos, start - pos, n)


class Bytes(ArchivedVec):
    """``Vec<u8>`` read and written as :class:`bytes`."""

    def __init__(self) -> None:
        super().__init__(U8)

    def read(self, dec: Decoder, pos: int) -> bytes:
        start, n = self.locate(dec, pos)
        return bytes(dec.buf[start : start + n])

    def deps(self, enc: Encoder, value: Any) -> Any:
        start = enc.pos
        enc.out += bytes(value)
        return (start, len(value))


class Box(Type):
    """``Box<T>``: an 8-byte relative pointer to an out-of-line ``T``."""

    size = 8
    align = 8

    def __init__(self, inner: Type | Callable[[], Type]) -> None:
        self._inner = inner

    @property
    def inner(self) -> Type:
        i = self._inner
        return i if isinstance(i, Type) else i()

    def read(self, dec: Decoder, pos: int) -> Any:
        dec.check(pos, 8, 8, "box")
        if dec.depth >= _MAX_DEPTH:
            raise RkyvError(f"boxes nested more than {_MAX_DEPTH} deep at {pos}")
        dec.depth += 1
        try:
            inner = self.inner
            dec.charge(inner.size, f"box at {pos}")
            return inner.read(dec, dec.target(pos, "box"))
        finally:
            dec.depth -= 1

    def deps(self, enc: Encoder, value: Any) -> Any:
        inner = self.inner
        r = inner.deps(enc, value)
        return inner.put(enc, value, r)

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        struct.pack_into("<q", enc.out, pos, res - pos)


class Struct(Type):
    """A ``repr(C)`` struct: fields ``(name, type, offset)``, decoded to and from a dict."""

    def __init__(self, fields: Sequence[tuple[str, Type, int]], size: int, align: int) -> None:
        self.fields = list(fields)
        self.size = size
        self.align = align

    def read(self, dec: Decoder, pos: int) -> dict[str, Any]:
        dec.check(pos, self.size, self.align, "struct")
        return {name: t.read(dec, pos + off) for name, t, off in self.fields}

    def deps(self, enc: Encoder, value: Any) -> Any:
        return [t.deps(enc, value[name]) for name, t, _ in self.fields]

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        for (name, t, off), r in zip(self.fields, res, strict=True):
            t.write(enc, pos + off, value[name], r)


class Enum(Type):
    """A ``repr(u8)`` enum; a value is a tuple ``(variant_name, *fields)``.

    ``variants`` maps the tag to ``(name, [(field_type, offset), ...])``.
    """

    def __init__(
        self, variants: dict[int, tuple[str, Sequence[tuple[Type, int]]]], size: int, align: int
    ) -> None:
        self.variants = {tag: (name, list(fields)) for tag, (name, fields) in variants.items()}
        self.tags = {name: tag for tag, (name, _) in self.variants.items()}
        self.size = size
        self.align = align

    def read(self, dec: Decoder, pos: int) -> tuple[Any, ...]:
        dec.check(pos, self.size, self.align, "enum")
        tag = dec.buf[pos]
        if tag not in self.variants:
            raise RkyvError(f"enum at {pos} has the unknown tag {tag}")
        name, fields = self.variants[tag]
        if not fields:
            return (name,)
        return (name, *[t.read(dec, pos + off) for t, off in fields])

    def deps(self, enc: Encoder, value: Any) -> Any:
        _, fields = self.variants[self.tags[value[0]]]
        return [t.deps(enc, v) for (t, _), v in zip(fields, value[1:], strict=True)]

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        tag = self.tags[value[0]]
        enc.out[pos] = tag
        _, fields = self.variants[tag]
        for (t, off), v, r in zip(fields, value[1:], res, strict=True):
            t.write(enc, pos + off, v, r)


class Option(Type):
    """``Option<T>``: a u8 tag (None 0, Some 1), then ``T`` at ``align(T)``; ``None`` in Python."""

    def __init__(self, inner: Type) -> None:
        self.inner = inner
        self.align = max(1, inner.align)
        self.off = _align_up(1, inner.align)
        self.size = _align_up(self.off + inner.size, self.align)

    def read(self, dec: Decoder, pos: int) -> Any:
        dec.check(pos, self.size, self.align, "option")
        tag = dec.buf[pos]
        if tag == 0:
            return None
        if tag != 1:
            raise RkyvError(f"option at {pos} has the tag {tag}")
        return self.inner.read(dec, pos + self.off)

    def deps(self, enc: Encoder, value: Any) -> Any:
        return None if value is None else self.inner.deps(enc, value)

    def write(self, enc: Encoder, pos: int, value: Any, res: Any) -> None:
        if value is not None:
            enc.out[pos] = 1
            self.inner.write(enc, pos + self.off, value, res)


def encode_root(root: Type, value: Any) -> bytes:
    """The archived bytes of ``value``: its dependencies, then the root, aligned to 8."""
    enc = Encoder()
    res = root.deps(enc, value)
    enc.pad(max(8, root.align))
    pos = enc.reserve(root.size)
    root.write(enc, pos, value, res)
    return bytes(enc.out)


def decode_root(root: Type, payload: bytes | bytearray | memoryview) -> Any:
    """Decode a payload whose root value of type ``root`` sits at its end."""
    return decode_root_with(root, Decoder(payload))


def decode_root_with(root: Type, dec: Decoder) -> Any:
    """:func:`decode_root` with a given decoder (whose ``later`` list the caller reads)."""
    pos = dec.n - root.size
    if pos < 0:
        raise RkyvError(f"the {dec.n}-byte payload is smaller than its {root.size}-byte root")
    dec.charge(root.size, "root")
    return root.read(dec, pos)
