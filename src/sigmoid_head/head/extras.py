"""What ``sigmoid-head calibrate`` saves beside a head: one base for every extra (no torch).

An extra is one JSON file of the head folder (:data:`sigmoid_head.head.files.EXTRA_FILES`,
the one list of them). Its class subclasses :class:`HeadExtra`, names its file
(:attr:`HeadExtra.FILE`) and says how its JSON object is made (:meth:`HeadExtra.to_dict`)
and parsed (:meth:`HeadExtra.from_dict`); saving and loading are written once, here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .files import EXTRA_FILES, read_extra, write_extra

E = TypeVar("E", bound="HeadExtra")


class HeadExtra:
    """One extra of a head folder: a JSON object in :attr:`FILE`.

    A subclass sets :attr:`FILE` (one of :data:`~sigmoid_head.head.files.EXTRA_FILES`) and
    implements :meth:`from_dict`; a dataclass needs no :meth:`to_dict` of its own.
    """

    FILE: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "FILE", None) not in EXTRA_FILES:
            raise TypeError(f"{cls.__name__}.FILE must be one of {list(EXTRA_FILES)}")
        if cls.from_dict.__func__ is HeadExtra.from_dict.__func__:  # type: ignore[attr-defined]
            raise TypeError(f"{cls.__name__} must define from_dict")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object saved (default: the dataclass' fields)."""
        if not is_dataclass(self):
            raise TypeError(f"{type(self).__name__} is not a dataclass: it must define to_dict")
        return asdict(self)

    @classmethod
    def from_dict(cls: type[E], data: Mapping[str, Any], source: str | Path | None = None) -> E:
        """The extra from the JSON object :meth:`to_dict` made.

        Raises:
            ValueError: a malformed object, named by ``source`` (default: :attr:`FILE`).
        """
        raise TypeError("HeadExtra is a base class: every subclass defines from_dict")

    def save(self, directory: str | Path) -> Path:
        """Write :attr:`FILE` into ``directory`` (atomically, through
        :func:`~sigmoid_head.head.files.write_extra`); returns its path."""
        return write_extra(directory, self.FILE, self.to_dict())

    @classmethod
    def load(cls: type[E], directory: str | Path | None) -> E | None:
        """The extra saved in a head folder, or None when there is none (or no folder).

        Raises:
            ValueError: a malformed file, named.
        """
        if directory is None:
            return None
        data = read_extra(directory, cls.FILE)
        return None if data is None else cls.from_dict(data, Path(directory) / cls.FILE)
