"""libgomp's map kinds and flags (gomp-constants.h), by value.

A kind is the low byte of GOMP_target_ext's 16-bit kinds (the high byte is the log2
alignment); the PRESENT bit (GCC 13+) sits at bit 8, so kinds here are full ints.
"""
FLAG_TO = 1 << 0
FLAG_FROM = 1 << 1
FLAG_SPECIAL_0 = 1 << 2
FLAG_SPECIAL_1 = 1 << 3
FLAG_SPECIAL_2 = 1 << 4      # "always"
FLAG_SPECIAL = FLAG_SPECIAL_1 | FLAG_SPECIAL_0
FLAG_SPECIAL_3 = 1 << 5
FLAG_SPECIAL_4 = 1 << 6
FLAG_SPECIAL_BITS = 0x7c
FLAG_FORCE = 1 << 7
FLAG_PRESENT = (1 << 8) | FLAG_SPECIAL_0
FLAG_DEEP_COPY = FLAG_SPECIAL_4 | FLAG_SPECIAL_2
IMPLICIT = FLAG_SPECIAL_3 | FLAG_SPECIAL_4   # GOMP_MAP_IMPLICIT: mapped because the region uses it

ALLOC = 0
TO = 1
FROM = 2
TOFROM = 3
POINTER = FLAG_SPECIAL_0 | 0                  # 4: size is the bias
TO_PSET = FLAG_SPECIAL_0 | 1                  # 5 (Fortran)
FORCE_PRESENT = FLAG_SPECIAL_0 | 2            # 6
DELETE = FLAG_SPECIAL_0 | 3                   # 7
FORCE_DEVICEPTR = FLAG_SPECIAL_1 | 0          # 8 (OpenACC deviceptr: the pointer variable)
IF_PRESENT = FLAG_SPECIAL_1 | 3               # 11 (OpenACC no_create)
FIRSTPRIVATE = FLAG_SPECIAL | 0               # 12
FIRSTPRIVATE_INT = FLAG_SPECIAL | 1           # 13
USE_DEVICE_PTR = FLAG_SPECIAL | 2             # 14
ZERO_LEN_ARRAY_SECTION = FLAG_SPECIAL | 3     # 15
USE_DEVICE_PTR_IF_PRESENT = FLAG_SPECIAL_2 | 0   # 16
ALWAYS_TO = FLAG_SPECIAL_2 | TO               # 17
ALWAYS_FROM = FLAG_SPECIAL_2 | FROM           # 18
ALWAYS_TOFROM = FLAG_SPECIAL_2 | TOFROM       # 19
RELEASE = FLAG_SPECIAL_2 | DELETE             # 23
STRUCT = FLAG_SPECIAL_2 | FLAG_SPECIAL | 0    # 28: size is the number of members after it
ALWAYS_POINTER = FLAG_SPECIAL_2 | FLAG_SPECIAL | 1              # 29: size is the bias
POINTER_TO_ZERO_LENGTH_ARRAY_SECTION = FLAG_SPECIAL_2 | FLAG_SPECIAL | 2   # 30
DELETE_ZERO_LEN_ARRAY_SECTION = FLAG_SPECIAL_2 | FLAG_SPECIAL | 3         # 31
ATTACH = FLAG_DEEP_COPY | 0                   # 80: size is the bias
DETACH = FLAG_DEEP_COPY | 1                   # 81
ATTACH_ZERO_LENGTH_ARRAY_SECTION = FLAG_DEEP_COPY | 2         # 82
FORCE_ALLOC = FLAG_FORCE | ALLOC              # 128
FORCE_TO = FLAG_FORCE | TO
FORCE_FROM = FLAG_FORCE | FROM
FORCE_TOFROM = FLAG_FORCE | TOFROM
FORCE_DETACH = FLAG_DEEP_COPY | FLAG_FORCE | 1   # 209
PRESENT_ALLOC = FLAG_PRESENT | ALLOC          # 260
PRESENT_TO = FLAG_PRESENT | TO
PRESENT_FROM = FLAG_PRESENT | FROM
PRESENT_TOFROM = FLAG_PRESENT | TOFROM
ALWAYS_PRESENT_TO = FLAG_SPECIAL_2 | FLAG_PRESENT | TO        # 277
ALWAYS_PRESENT_FROM = FLAG_SPECIAL_2 | FLAG_PRESENT | FROM
ALWAYS_PRESENT_TOFROM = FLAG_SPECIAL_2 | FLAG_PRESENT | TOFROM

# GOMP_target_ext flags
TARGET_FLAG_NOWAIT = 1 << 0
TARGET_FLAG_EXIT_DATA = 1 << 1

NAMES = {v: k for k, v in sorted(globals().items(), reverse=True)
         if k.isupper() and not k.startswith(("FLAG_", "TARGET_")) and isinstance(v, int)}


def base(kind: int) -> int:
    """The kind without the implicit bits."""
    return kind & ~IMPLICIT if is_implicit(kind) else kind


def is_implicit(kind: int) -> bool:
    """GOMP_MAP_IMPLICIT_P: the special bits are exactly the implicit pair."""
    return (kind & FLAG_SPECIAL_BITS) == IMPLICIT


def _core(kind: int) -> int:
    """The kind without implicit, always, force and present bits."""
    k = base(kind)
    if k & (1 << 8):
        k &= ~FLAG_PRESENT
    return k & ~(FLAG_SPECIAL_2 | FLAG_FORCE)


def is_mapping(kind: int) -> bool:
    """A kind that makes or uses a map entry (to/from/tofrom/alloc and their variants)."""
    return _core(kind) <= TOFROM and base(kind) != USE_DEVICE_PTR_IF_PRESENT


def copies_to(kind: int) -> bool:
    return is_mapping(kind) and bool(kind & FLAG_TO)


def copies_from(kind: int) -> bool:
    return is_mapping(kind) and bool(kind & FLAG_FROM)


def is_always(kind: int) -> bool:
    return is_mapping(kind) and bool(base(kind) & FLAG_SPECIAL_2)


def is_present(kind: int) -> bool:
    k = base(kind)
    return k == FORCE_PRESENT or (is_mapping(kind) and (k & FLAG_PRESENT) == FLAG_PRESENT)


def name(kind: int) -> str:
    s = NAMES.get(base(kind), str(base(kind)))
    return s + ",implicit" if is_implicit(kind) else s


class Traits:
    """What the runtime needs to know of a kind, computed once a kind."""
    __slots__ = ("kind", "base", "mapping", "to", "from_", "always", "present", "implicit")

    def __init__(self, kind):
        self.kind = kind
        self.base = base(kind)
        self.mapping = is_mapping(kind)
        self.to = copies_to(kind)
        self.from_ = copies_from(kind)
        self.always = is_always(kind)
        self.present = is_present(kind)
        self.implicit = is_implicit(kind)


_traits = {}


def traits(kind: int) -> Traits:
    t = _traits.get(kind)
    if t is None:
        t = _traits[kind] = Traits(kind)
    return t
