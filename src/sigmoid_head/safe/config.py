"""Option files (``--config``) that cannot hang, exhaust memory or be read other than meant.

:func:`read_options` is the one reader of a user's YAML or JSON file of option values:

* **regular files only**, opened without blocking (a FIFO, ``/dev/zero``, a directory or a
  link to one is refused before a byte is read) and read up to :data:`MAX_BYTES`;
* **YAML 1.2 JSON-schema semantics**: ``true``/``false``, ``null``, JSON integers and
  floats are typed; every other plain scalar is a string, read later as the option's
  flag would read it. So ``010`` is ``"010"`` (the flag's 10, not YAML 1.1's octal 8),
  ``1:30`` and ``0x1A`` are strings a numeric option refuses, ``yes``/``no``/``on`` are
  not booleans. Tags (``!!python/...``, ``!!binary``, ...) are refused;
* **bounded**: nesting deeper than :data:`MAX_DEPTH` and more than :data:`MAX_NODES`
  values after alias expansion (an alias bomb) are refused while the file is composed,
  before any value is built;
* **duplicate keys refused** (YAML and JSON), naming the key;
* every error is one ``ValueError`` line naming the file; values are shown by
  :func:`shown`, which never builds the text of a large value.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 1 << 20
"""The largest option file read (1 MiB; a real one is a few hundred bytes)."""
MAX_DEPTH = 32
"""The deepest nesting of lists and mappings accepted."""
MAX_NODES = 10_000
"""The most values (scalars, lists, mappings; aliases counted once per use) accepted."""

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]*)?([eE][-+]?[0-9]+)?\Z")
_PLAIN_TAGS = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map")
"""The tags of untagged nodes; an explicit tag (``!!int``, ``!!python/...``) is refused."""
_SPECIAL = {"true": True, "false": False, "null": None, "~": None, "": None}


def read_regular(path: str | Path, what: str, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO
    without a writer, a device, a socket or a directory (or a link to any) is refused at
    once and never read.

    Raises:
        ValueError: one line naming ``path`` and ``what``: empty name, missing, not a
            regular file, unreadable, or larger than ``limit``.
    """
    if not str(path):
        raise ValueError(f"{what}: an empty file name")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise ValueError(f"{path}: cannot read the {what} ({err.strerror or err})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path}: the {what} is not a regular file")
        if info.st_size > limit:
            raise ValueError(f"{path}: the {what} is larger than {limit} bytes")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise ValueError(f"{path}: cannot read the {what} ({err.strerror or err})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise ValueError(f"{path}: the {what} is larger than {limit} bytes")
    return b"".join(chunks)


def shown(value: Any, width: int = 40) -> str:
    """A short, bounded text for ``value`` in an error message: scalars as YAML writes them
    (cut to ``width``), a list or mapping by its kind and length only."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"a mapping of {len(value)} keys"
    if isinstance(value, str):
        return repr(value[:width] + ("..." if len(value) > width else ""))
    if isinstance(value, int) and value.bit_length() > 128:
        return "an integer of more than 38 digits"
    return f"{value!r:.{width}}"


def read_options(path: str | Path, what: str = "--config file") -> dict[str, Any]:
    """The mapping of option names to values in the JSON (``.json``) or YAML (``.yaml``,
    ``.yml``) file ``path`` (see the module docstring); an empty YAML file gives ``{}``.

    Raises:
        ValueError: one line naming the file: another suffix, not a regular file, too
            large, a syntax error, a tag, too deep, too many values, a duplicate key, or
            not a mapping of names.
    """
    if not str(path):
        raise ValueError(f"{what}: an empty file name (an unset variable?)")
    suffix = Path(path).suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise ValueError(f"{path}: a {what} is .yaml, .yml or .json")
    data = read_regular(path, what)
    values = _json(data, path, what) if suffix == ".json" else _yaml(data, path)
    if values is None and suffix != ".json":
        values = {}
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise ValueError(f"{path}: a {what} holds a mapping of option names to values")
    return values


def _json(data: bytes, path: str | Path, what: str) -> Any:
    """JSON with duplicate keys refused and the nesting and size bounds of YAML."""
    from .json_io import loads

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"the key {shown(key)} is given twice")
            out[key] = value
        return out

    if _json_depth(data) > MAX_DEPTH:
        raise ValueError(f"{path}: not a valid {what} (nested deeper than {MAX_DEPTH})")
    return loads(data, path, object_pairs_hook=pairs)


def _json_depth(data: bytes) -> int:
    """The deepest nesting of brackets in JSON text outside its strings (bounded before the
    recursive parser sees it)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in data:
        if in_string:
            in_string = escaped or ch != 0x22  # '"'
            escaped = not escaped and ch == 0x5C  # '\\'
        elif ch == 0x22:
            in_string = True
        elif ch in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in b"]}":
            depth -= 1
    return deepest


def _yaml(data: bytes, path: str | Path) -> Any:
    import yaml

    try:
        node = _Loader(data).get_single_node()
        if node is None:
            return None
        _check_tree(node)
        return _value(node)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        text = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValueError(f"{path}: not valid YAML ({text}{at})") from None
    except _Refused as err:
        raise ValueError(f"{path}: {err}") from None


class _Refused(Exception):
    """A YAML tree outside the bounds (message without the file name)."""


def _loader_class() -> type:
    import yaml

    class Loader(yaml.BaseLoader):
        """PyYAML's reader and composer without implicit typing (every plain scalar is
        tagged a string; :func:`_scalar` types it), with nesting bounded while composing
        (the composer recurses once per level)."""

        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise _Refused(
                        f"not valid YAML (nested deeper than {MAX_DEPTH} at line {mark.line + 1})"
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return Loader


def _Loader(data: bytes) -> Any:  # noqa: N802 - a class built on first use (yaml is optional)
    return _loader_class()(data)


def _check_tree(root: Any) -> None:
    """Refuse more than :data:`MAX_NODES` values, counting each alias use (shared nodes are
    walked again), and any explicit tag."""
    import yaml

    count, stack = 0, [root]
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise _Refused(
                f"more than {MAX_NODES} values (aliases expanded); "
                "an option file is a short mapping"
            )
        if node.tag not in _PLAIN_TAGS:
            raise _Refused(
                f"the tag {node.tag} at line {node.start_mark.line + 1} is not an option value"
            )
        if isinstance(node, yaml.MappingNode):
            stack += [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value


def _value(node: Any) -> Any:
    """The value of a checked node: mappings (duplicate keys refused), lists, scalars by
    the JSON schema of YAML 1.2."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _value(key_node)
            if not isinstance(key, str):
                raise _Refused(
                    f"the key {shown(key)} at line {key_node.start_mark.line + 1} is not a name"
                )
            if key in out:
                raise _Refused(
                    f"the key {shown(key)} is given twice (line {key_node.start_mark.line + 1})"
                )
            out[key] = _value(value_node)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_value(n) for n in node.value]
    return _scalar(node)


def _scalar(node: Any) -> Any:
    """A scalar: quoted -> the text; plain -> typed by the JSON schema of YAML 1.2."""
    text = node.value
    if node.style is not None:
        return text
    if text in _SPECIAL:
        return _SPECIAL[text]
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text
