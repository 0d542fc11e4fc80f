"""Registries of names and the classes they stand for (fsspec's ``registry`` is the model), and
the one of source kinds (``register_source``); the strategies' is beside ``PlanStrategy``. A name
is registered with its class given as ``"package.module:Class"`` (imported when first used, so
registering imports nothing) or as the class itself. The built-in kinds are registered at the end
of this module through the same call, so a source kind of your own is one module and one call.

Registering a name again with the same class does nothing (a notebook cell run twice); with
another class it is refused unless ``clobber=True``, so two packages cannot take one name
silently. A name registered but not importable fails where it is first used, in one line naming
the registering call.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from openmirror_nb._core.errors import ConfigError, did_you_mean, user_line
from openmirror_nb._core.sources.table import Source

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*\Z")


def members(protocol: type) -> tuple[str, ...]:
    """The members ``protocol`` states: its annotated attributes and its methods and properties."""
    names = {*protocol.__annotations__, *(n for n in vars(protocol) if not n.startswith("_"))}
    return tuple(sorted(names))


def lacking(value: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``value`` (a class or an instance) does not have."""
    return [m for m in members(protocol) if not hasattr(value, m)]


class Registry:
    """Names and the classes they stand for, as registered (``targets``) and once used (``loaded``:
    what ``make`` made of the class, e.g. its one instance). ``check(name, cls)`` says what else
    is wrong with a class that has every member of ``protocol`` (``None``: nothing)."""

    def __init__(
        self,
        what: str,
        call: str,
        protocol: type,
        make: Callable[[type], Any] = lambda cls: cls,
        check: Callable[[str, type], str | None] = lambda name, cls: None,
    ) -> None:
        self.what, self.call, self.protocol, self.make, self.check = what, call, protocol, make, check
        self.targets: dict[str, str | type] = {}
        self.loaded: dict[str, Any] = {}

    def names(self) -> tuple[str, ...]:
        """The registered names, in the order they were registered (the built-ins first)."""
        return tuple(self.targets)

    def register(self, name: str, target: str | type, *, clobber: bool) -> None:
        call = f"{self.call}({name!r}, {_text(target)!r})"
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(
                f"{call}: the {self.what} is not a name of lower-case letters, digits and _; give one "
                "like 'csv_folder'."
            )
        if isinstance(target, str) and not _TARGET.match(target):
            raise ConfigError(f"{call}: give the class as 'package.module:Class' (or the class itself).")
        if not isinstance(target, str | type):
            raise ConfigError(f"{call}: {type(target).__name__} is not a class nor 'package.module:Class'.")
        held = self.targets.get(name)
        if held is not None and _text(held) == _text(target):
            return
        if held is not None and not clobber:
            raise ConfigError(
                f"{call}: {name!r} is registered already, to {_text(held)!r}; pass clobber=True to "
                "replace it."
            )
        made = self._checked(name, target, call) if isinstance(target, type) else None
        self.targets[name] = target
        self.loaded.pop(name, None)
        if made is not None:
            self.loaded[name] = made

    def get(self, name: str) -> Any:
        """What ``name`` stands for, imported on first use."""
        if name in self.loaded:
            return self.loaded[name]
        target = self.targets.get(name) if isinstance(name, str) else None
        if target is None:
            raise ConfigError(
                f"The {self.what} {name!r} is not registered (registered: {', '.join(self.names())})."
                f"{did_you_mean(str(name), self.names())} Register it first: "
                f"{self.call}({name!r}, 'package.module:Class')."
            )
        call = f"{self.call}({name!r}, {_text(target)!r})"
        cls = target if isinstance(target, type) else _import(target, call)
        made = self.loaded[name] = self._checked(name, cls, call)
        return made

    def _checked(self, name: str, cls: type, call: str) -> Any:
        """``cls`` made (``make``), once it is a class with every member of the protocol."""
        if not isinstance(cls, type):
            raise ConfigError(f"{call}: {cls!r} is not a class; name the class.")
        missing = lacking(cls, self.protocol)
        if missing:
            raise ConfigError(
                f"{call}: {cls.__name__} lacks {', '.join(missing)}; subclass om.{self.protocol.__name__}, "
                "which has the defaults of the optional members."
            )
        wrong = self.check(name, cls)
        if wrong:
            raise ConfigError(f"{call}: {wrong}.")
        try:
            return self.make(cls)
        except Exception as exc:  # someone else's constructor: one line naming the call
            raise ConfigError(f"{call}: {cls.__name__}() fails ({user_line(exc)}); fix the class.") from None


def _text(target: object) -> str:
    """A target as ``package.module:Class``."""
    if isinstance(target, type):
        return f"{target.__module__}:{target.__qualname__}"
    return target if isinstance(target, str) else repr(target)


def _import(target: str, call: str) -> Any:
    module, _, path = target.partition(":")
    try:
        found: Any = importlib.import_module(module)
    except Exception as exc:  # any import failure of someone else's module: one line naming the call
        raise ConfigError(
            f"{call}: {module} cannot be imported ({user_line(exc)}); install it, or register the name "
            "again with clobber=True."
        ) from None
    for part in path.split("."):
        if not hasattr(found, part):
            raise ConfigError(f"{call}: {module} has no {path}; check the class's name.")
        found = getattr(found, part)
    return found


def _kind(name: str, cls: type) -> str | None:
    """What is wrong with a source class registered as kind ``name``: its ``kind`` is another."""
    kind = getattr(cls, "kind", None)
    if kind == name:
        return None
    return f"{cls.__name__}.kind is {kind!r}, not {name!r}; set kind = {name!r} on the class (plans name it)"


SOURCES = Registry("source kind", "om.register_source", Source, check=_kind)


def register_source(kind: str, target: str | type[Source], /, *, clobber: bool = False) -> None:
    """Register a source kind: a plan of a source of that kind is saved naming it, and loads again
    (``om.load_plan``) as an instance of ``target`` (its ``from_dict``).

    Args:
        kind: The kind's name, as the class's ``kind`` attribute says it (lower-case letters,
            digits and ``_``).
        target: The class, a subclass of ``om.Source`` (or one with every member of it), as
            ``"package.module:Class"`` (imported when first used) or the class itself.
        clobber: Replace a kind registered already to another class (registering the same class
            again does nothing).

    Raises:
        ConfigError: ``kind`` is not such a name, it is registered already to another class, or
            ``target`` is not a class with every member of ``om.Source``. A ``target`` given as a
            text is checked when first used; it then fails in one line naming this call.

    Example:
        >>> om.register_source("csv_folder", "my_package.csv_folder:CsvFolder")
    """
    SOURCES.register(kind, target, clobber=clobber)


def source_class(kind: str) -> type[Source]:
    """The class registered for source ``kind``, imported on first use.

    Raises:
        ConfigError: ``kind`` is not registered, or its class cannot be imported or lacks a
            member; the message names the registering call.
    """
    found: type[Source] = SOURCES.get(kind)
    return found


def source_kinds() -> tuple[str, ...]:
    """The registered source kinds, the built-ins first."""
    return SOURCES.names()


# The built-in kinds, registered as any other kind is.
register_source("catalog", "openmirror_nb._core.sources.catalog:Catalog")
register_source("jdbc", "openmirror_nb._core.sources.jdbc:Jdbc")
register_source("delta_folder", "openmirror_nb._core.sources.delta_folder:DeltaFolder")
