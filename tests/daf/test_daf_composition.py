"""ZarrDaf is a façade over parts it composes, not a stack of mixins.

Each part (node storage, scalars, axes, vectors, matrices, fills, description) is a small
class owning its state, built by :class:`~dafzarr.daf.ZarrDaf` with the collaborators it
needs passed to its constructor. The tests below keep it so: no class of ``dafzarr/_core/daf``
inherits from another class of that folder but the documented bases, no module reaches into
a collaborator's private attributes, and no part holds the data set itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dafzarr
from dafzarr._core.daf import zarrdaf
from dafzarr._core.daf.storage import DafStorage

DAF = Path(zarrdaf.__file__).parent

# The bases a class of the folder may take from another class of the folder: the abstract
# backend and layout, the streamed chunks written where they are stored, the reader API of
# the data sets that are not stored themselves (views, chains) with its query methods, and
# the read chain a write chain extends, and the reader protocol the writer protocol extends.
DOCUMENTED_BASES = frozenset(
    {"DafBackend", "ZarrLayout", "StreamedChunk", "ReaderBase", "Queries", "ReadChain", "DafReader"}
)
# What a reader may ask another reader beyond the public API (the ReaderBase primitives).
READER_PRIMITIVES = frozenset({"_data_version"})


def _classes(path: Path) -> list[ast.ClassDef]:
    return [
        n
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(n, ast.ClassDef)
    ]


def subclassed_folder_classes(folder: Path) -> list[str]:
    """``module:Class(Base)`` for every class of the modules of ``folder`` whose base is a
    class of that folder other than :data:`DOCUMENTED_BASES`."""
    modules = sorted(folder.glob("*.py"))
    defined = {c.name for path in modules for c in _classes(path)}
    found = []
    for path in modules:
        for cls in _classes(path):
            for base in cls.bases:
                name = ast.unparse(base)
                if name in defined and name not in DOCUMENTED_BASES:
                    found.append(f"{path.name}:{cls.name}({name})")
    return found


def _reaches_privately(node: ast.Attribute) -> bool:
    """Whether ``node`` is ``self.part._name`` (``_name`` not a reader primitive)."""
    held = node.value
    return (
        node.attr.startswith("_")
        and not node.attr.startswith("__")
        and node.attr not in READER_PRIMITIVES
        and isinstance(held, ast.Attribute)
        and isinstance(held.value, ast.Name)
        and held.value.id == "self"
    )


def private_reaches(folder: Path) -> list[str]:
    """``file:line: self.part._name`` for every access to a private attribute of an object
    held in an attribute of ``self``, in the modules below ``folder``."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [
            f"{path.relative_to(folder)}:{node.lineno}: {ast.unparse(node)}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and _reaches_privately(node)
        ]
    return found


def test_no_mixins_in_the_daf_folder() -> None:
    found = subclassed_folder_classes(DAF)
    assert not found, "classes built from mixins of the folder:\n" + "\n".join(found)


def test_the_check_sees_a_mixin(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Part:\n    pass\n\n\nclass DafBackend:\n    pass\n")
    (tmp_path / "b.py").write_text(
        "from a import DafBackend, Part\n\n\n"
        "class Whole(Part):\n    pass\n\n\n"
        "class Disk(DafBackend):\n    pass\n"
    )
    assert subclassed_folder_classes(tmp_path) == ["b.py:Whole(Part)"]


def test_no_part_reads_another_parts_private_state() -> None:
    found = private_reaches(DAF)
    assert not found, "private attributes of collaborators:\n" + "\n".join(found)


def test_the_check_sees_a_private_reach(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "class Vectors:\n    def f(self):\n        return self._axes._cache, self._axes.cache\n"
    )
    assert private_reaches(tmp_path) == ["m.py:3: self._axes._cache"]


def test_zarr_daf_is_a_facade_over_its_parts() -> None:
    own_bases = [
        c.__name__ for c in dafzarr.ZarrDaf.__mro__[1:] if c.__module__.startswith("dafzarr")
    ]
    assert own_bases == ["Queries"]
    with dafzarr.memory_daf() as daf:
        daf.add_axis("cell", ["a", "b"])
        view = daf.read_only_view()
        for handle in (daf, view):
            parts = [
                v
                for v in vars(handle).values()
                if type(v).__module__.startswith("dafzarr._core.daf.")
                and type(v).__name__
                in ("DafStorage", "Scalars", "Axes", "Vectors", "Matrices", "Fills", "Description")
            ]
            assert len(parts) == 7
            for part in parts:  # each part is handed its collaborators, never the data set
                assert all(v is not handle for v in vars(part).values())
        storage = vars(view)["_storage"]
        assert isinstance(storage, DafStorage) and storage is not vars(daf)["_storage"]
        assert storage.read_only and not vars(daf)["_storage"].read_only
