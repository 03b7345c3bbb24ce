"""`Frozen`: the project's immutable records (the kernel types, the settings, a plugin's
devices and images): what ``@dataclass(frozen=True)`` gives them, without the
milliseconds that making a dataclass takes (it compiles six functions per class), so
that a new process imports no `dataclasses`."""
from __future__ import annotations


class Frozen:
    """An immutable record of the fields `_fields` (``_defaults``: the values of those that
    may be left out), made by position or keyword, compared, hashed, pickled and shown by
    its fields.  A subclass lists its own fields in ``__slots__`` and all of them, its
    bases' first, in ``_fields``; one whose instances are equal only to themselves sets
    ``__eq__, __hash__ = object.__eq__, object.__hash__``, and one that compares only
    some fields overrides `_key`."""
    __slots__ = ()
    _fields: tuple = ()
    _defaults: dict = {}

    def __init__(self, *args, **kwargs):
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes at most {len(fields)} "
                            f"arguments, {len(args)} given")
        values = dict(zip(fields, args))
        for name, v in kwargs.items():
            if name not in fields or name in values:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated "
                                f"argument {name!r}")
            values[name] = v
        for name in fields:
            if name in values:
                v = values[name]
            elif name in self._defaults:
                v = self._defaults[name]
            else:
                raise TypeError(f"{type(self).__name__}() needs the argument {name!r}")
            object.__setattr__(self, name, v)

    def as_dict(self) -> dict:
        """The fields by name (what dataclasses.asdict gives)."""
        return dict(zip(self._fields, self._values()))

    def replace(self, **changes):
        """A copy with the fields ``changes`` names set anew (dataclasses.replace)."""
        return type(self)(**{**self.as_dict(), **changes})

    def _values(self):
        return tuple([getattr(self, name) for name in self._fields])

    def _key(self):
        """What equality and the hash compare: every field."""
        return self._values()

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return type(self), self._values()

    def __repr__(self):
        return f"{type(self).__name__}(" + ", ".join(
            f"{n}={v!r}" for n, v in zip(self._fields, self._values())) + ")"
