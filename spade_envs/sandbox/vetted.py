"""Allow-lists of the static layer: exactly which names each importable module exposes.

A module copy (:class:`~.prelude.SandboxModule`) holds only the names listed here,
never "everything public minus a deny list": ordinary library functions launder
getattr/setattr/eval/exec (``functools.update_wrapper`` with a crafted ``assigned=``,
``singledispatch().register`` -> ``typing.get_type_hints`` -> ``eval``, ``dataclass``
pasting field names into ``exec``'d source, ``enum.global_enum`` writing into any module
of ``sys.modules``, ``collections.UserString.format``, ``abc.ABCMeta``/``enum.EnumType``
building classes from a dict, ``typing.no_type_check`` setting attributes on anything).
A name is listed only after checking what it does with its arguments; the few useful
ones that need care are replaced by the guarded versions in this module.

Names missing from the running Python/numpy are skipped (``math.cbrt`` is 3.11+), so a
list may name a little more than one version has. The numpy list is array math only: no
file I/O (``load``/``save``/``fromfile``/``memmap``/``loadtxt``...), no ``ctypeslib``,
``lib``, ``testing``, ``f2py``, print-option setters or buffer-size knobs.
"""

from __future__ import annotations

import functools
import keyword
from typing import Any

from . import class_guards, guards, own

#: module name -> names a program may use (whitespace-separated)
ALLOW: dict[str, str] = {
    "math": """acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist
        e erf erfc exp exp2 expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf isclose
        isfinite isinf isnan isqrt lcm ldexp lgamma log log10 log1p log2 modf nan nextafter perm pi
        pow prod radians remainder sin sinh sqrt sumprod tan tanh tau trunc ulp""",
    "random": """Random betavariate binomialvariate choice choices expovariate gammavariate gauss
        getrandbits getstate lognormvariate normalvariate paretovariate randbytes randint random
        randrange sample seed setstate shuffle triangular uniform vonmisesvariate weibullvariate""",
    "re": """A ASCII DEBUG DOTALL I IGNORECASE L LOCALE M MULTILINE NOFLAG S U UNICODE VERBOSE X
        Match Pattern RegexFlag compile error escape findall finditer fullmatch match purge search
        split sub subn""",
    "json": "JSONDecodeError JSONDecoder JSONEncoder dumps loads",
    "string": """ascii_letters ascii_lowercase ascii_uppercase capwords digits hexdigits octdigits
        printable punctuation whitespace Template""",
    "itertools": """accumulate batched chain combinations combinations_with_replacement compress count
        cycle dropwhile filterfalse groupby islice pairwise permutations product repeat starmap
        takewhile tee zip_longest""",
    "functools": """cache cached_property cmp_to_key lru_cache partial partialmethod reduce
        total_ordering update_wrapper wraps""",
    "collections": """ChainMap Counter OrderedDict UserDict UserList defaultdict deque namedtuple""",
    "collections.abc": """AsyncGenerator AsyncIterable AsyncIterator Awaitable ByteString Callable
        Collection Container Coroutine Generator Hashable ItemsView Iterable Iterator KeysView
        Mapping MappingView MutableMapping MutableSequence MutableSet Reversible Sequence Set Sized
        ValuesView""",
    "heapq": "heapify heappop heappush heappushpop heapreplace merge nlargest nsmallest",
    "bisect": "bisect bisect_left bisect_right insort insort_left insort_right",
    "fractions": "Fraction",
    "decimal": """BasicContext Context ConversionSyntax Decimal DecimalException DefaultContext
        DivisionByZero DivisionImpossible DivisionUndefined ExtendedContext FloatOperation Inexact
        InvalidContext InvalidOperation MAX_EMAX MAX_PREC MIN_EMIN MIN_ETINY Overflow ROUND_05UP
        ROUND_CEILING ROUND_DOWN ROUND_FLOOR ROUND_HALF_DOWN ROUND_HALF_EVEN ROUND_HALF_UP ROUND_UP
        Rounded Subnormal Underflow getcontext localcontext setcontext""",
    "statistics": """NormalDist StatisticsError correlation covariance fmean geometric_mean
        harmonic_mean linear_regression mean median median_grouped median_high median_low mode
        multimode pstdev pvariance quantiles stdev variance""",
    "datetime": "MAXYEAR MINYEAR UTC date datetime time timedelta timezone tzinfo",
    "calendar": """Calendar FRIDAY IllegalMonthError IllegalWeekdayError MONDAY SATURDAY SUNDAY
        THURSDAY TUESDAY WEDNESDAY TextCalendar day_abbr day_name firstweekday isleap leapdays
        month month_abbr month_name monthcalendar monthrange setfirstweekday timegm weekday
        weekheader""",
    "hashlib": """algorithms_available algorithms_guaranteed blake2b blake2s md5 new sha1 sha224
        sha256 sha384 sha3_224 sha3_256 sha3_384 sha3_512 sha512 shake_128 shake_256""",
    "copy": "Error copy deepcopy",
    "enum": "Enum IntEnum Flag IntFlag StrEnum auto unique",
    "typing": """AbstractSet Annotated Any AnyStr Callable ClassVar Collection Container Counter
        DefaultDict Deque Dict Final FrozenSet Generator Generic Hashable ItemsView Iterable
        Iterator KeysView List Literal LiteralString Mapping MappingView MutableMapping
        MutableSequence MutableSet NamedTuple Never NewType NoReturn Optional OrderedDict Protocol
        Reversible Self Sequence Set Sized SupportsAbs SupportsFloat SupportsIndex SupportsInt
        SupportsRound Text Tuple Type TypeAlias TypeVar TypedDict Union ValuesView cast final
        overload TYPE_CHECKING""",
    "textwrap": "TextWrapper dedent fill indent shorten wrap",
    "operator": """abs add and_ call concat contains countOf eq floordiv ge getitem gt iadd iand
        iconcat ifloordiv ilshift imatmul imod imul index indexOf inv invert ior ipow irshift is_
        is_not isub itemgetter itruediv ixor le length_hint lshift lt matmul mod mul ne neg not_
        or_ pos pow rshift setitem delitem sub truediv truth xor attrgetter methodcaller""",
    "abc": "ABC abstractmethod abstractproperty abstractclassmethod abstractstaticmethod",
    "dataclasses": """FrozenInstanceError InitVar KW_ONLY MISSING asdict astuple dataclass field
        fields is_dataclass replace""",
    # constants (SPADE's games read sys.maxsize as "infinity") and the recursion limit, its
    # setter capped (RECURSION_CAP): no modules, path, argv, stdout, exit, settrace or
    # anything else of the real sys
    "sys": """maxsize float_info int_info version_info version hexversion maxunicode byteorder
        getrecursionlimit setrecursionlimit""",
    # text utilities SPADE's prompts allow: pure functions of their arguments
    "difflib": """Differ IS_CHARACTER_JUNK IS_LINE_JUNK Match SequenceMatcher context_diff
        get_close_matches ndiff restore unified_diff""",
    "unicodedata": """bidirectional category combining decimal decomposition digit east_asian_width
        is_normalized lookup mirrored name normalize numeric unidata_version""",
    # the pure path functions only: nothing that reads the file system, the working
    # directory or the environment (exists, getsize, abspath, realpath, relpath,
    # expanduser, expandvars are absent); ``import os`` gives just ``os.path`` and ``os.sep``
    "os.path": """altsep basename commonpath commonprefix curdir dirname extsep isabs join normcase
        normpath pardir pathsep sep split splitdrive splitext""",
    "__future__": """annotations absolute_import division generator_stop generators nested_scopes
        print_function unicode_literals with_statement""",
}

#: numpy: array math, dtypes and constants; submodules listed under ``numpy.<name>``
NUMPY_ALLOW = """
    e euler_gamma inf nan pi newaxis
    bool_ bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 intp uintp int_ uint float16
    float32 float64 longdouble complex64 complex128 half single double longlong ulonglong
    byte ubyte short ushort intc uintc complexfloating floating integer signedinteger
    unsignedinteger number generic inexact object_ str_ bytes_ dtype ndarray finfo iinfo
    array asarray asanyarray ascontiguousarray copy zeros ones empty full arange linspace logspace
    geomspace eye identity zeros_like ones_like empty_like full_like fromiter frombuffer
    fromfunction meshgrid mgrid ogrid indices diag diagflat diagonal tri triu tril vander
    abs absolute add subtract multiply divide true_divide floor_divide power float_power mod
    remainder fmod divmod negative positive reciprocal sign sqrt cbrt square exp exp2 expm1 log
    log2 log10 log1p sin cos tan arcsin arccos arctan arctan2 hypot sinh cosh tanh arcsinh
    arccosh arctanh degrees radians deg2rad rad2deg floor ceil trunc rint round around fix clip
    maximum minimum fmax fmin gcd lcm heaviside nan_to_num real imag conj conjugate angle
    interp convolve correlate
    sum prod mean median average std var min max amin amax argmin argmax ptp cumsum cumprod
    nansum nanprod nanmean nanmedian nanstd nanvar nanmin nanmax nanargmin nanargmax
    nancumsum nancumprod percentile quantile nanpercentile nanquantile all any count_nonzero
    nonzero flatnonzero argwhere where select choose extract place put take take_along_axis
    put_along_axis compress unique sort argsort lexsort partition argpartition searchsorted
    bincount digitize histogram histogram_bin_edges diff ediff1d gradient cross dot vdot inner
    outer matmul tensordot einsum kron trace
    reshape ravel transpose swapaxes moveaxis rollaxis squeeze expand_dims atleast_1d atleast_2d
    atleast_3d broadcast_to broadcast_arrays broadcast_shapes concatenate stack vstack hstack
    dstack column_stack split array_split hsplit vsplit dsplit tile repeat roll flip fliplr
    flipud rot90 pad append insert delete resize trim_zeros shape ndim size
    logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor
    bitwise_not invert left_shift right_shift equal not_equal less less_equal greater
    greater_equal isclose allclose array_equal array_equiv isnan isinf isfinite isposinf
    isneginf isreal iscomplex isscalar isin intersect1d union1d setdiff1d setxor1d
    array2string array_repr array_str format_float_positional format_float_scientific
    errstate seterr geterr can_cast result_type promote_types issubdtype ndenumerate ndindex
    vectorize apply_along_axis piecewise base_repr binary_repr unravel_index
    ravel_multi_index
"""
NUMPY_SUBMODULES: dict[str, str] = {
    "random": """default_rng Generator RandomState seed rand randn randint random random_sample
        choice shuffle permutation uniform normal standard_normal integers binomial poisson
        exponential beta gamma multinomial""",
    "linalg": """LinAlgError cholesky cond det eig eigh eigvals eigvalsh inv lstsq matrix_power
        matrix_rank norm pinv qr slogdet solve svd multi_dot""",
    "fft": "fft ifft fft2 ifft2 fftn ifftn rfft irfft fftfreq rfftfreq fftshift ifftshift",
}


def pick(module: Any, names: str, *, strict: bool = False) -> dict[str, Any]:
    """The listed attributes of ``module`` that exist (all of them when ``strict``)."""
    out: dict[str, Any] = {}
    for name in names.split():
        if hasattr(module, name):
            out[name] = getattr(module, name)
        elif strict:  # pragma: no cover - a list naming something gone
            raise AttributeError(f"{module.__name__}.{name}")
    return out


# -- guarded replacements -------------------------------------------------------------------
_WRAPPER_NAMES = ("__name__", "__qualname__", "__doc__")


def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = None, updated: Any = None) -> Any:
    """``functools.update_wrapper`` that copies only the name, qualname and docstring, read
    through the guards, onto a plain function or own object; ``assigned``/``updated`` are
    refused (with them the real one is an unguarded getattr/setattr of any names)."""
    if assigned is not None or updated is not None:
        raise guards.SandboxViolation("update_wrapper()/wraps() take no assigned= or updated= in the sandbox")
    if not (type(wrapper) is _FunctionType or own.is_own(wrapper)):
        raise guards.SandboxViolation("update_wrapper()/wraps() only update the program's own functions")
    for name in _WRAPPER_NAMES:
        try:
            value = guards.guarded_getattr(wrapped, name)
        except (AttributeError, guards.SandboxViolation):
            continue
        if isinstance(value, str) or value is None:
            try:
                setattr(wrapper, name, value)
            except (AttributeError, TypeError):
                pass
    return wrapper


def wraps(wrapped: Any, assigned: Any = None, updated: Any = None) -> Any:
    """``functools.wraps`` over :func:`update_wrapper`."""
    if assigned is not None or updated is not None:
        raise guards.SandboxViolation("update_wrapper()/wraps() take no assigned= or updated= in the sandbox")
    return lambda wrapper: update_wrapper(wrapper, wrapped)


def _own_class(cls: Any, what: str) -> type:
    if not (isinstance(cls, type) and cls in own.OWN_CLASSES):
        raise guards.SandboxViolation(f"{what} only applies to the program's own classes in the sandbox")
    return cls


def total_ordering(cls: Any) -> type:
    """``functools.total_ordering`` on the program's own classes only (it sets attributes)."""
    return _real_total_ordering(_own_class(cls, "total_ordering()"))


def _check_field_names(cls: type) -> None:
    names = vars(cls).get("__annotations__", {})
    for name in names:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__"):
            raise guards.SandboxViolation(f"dataclass field name {name!r} is not a plain identifier")


def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
    """``dataclasses.dataclass`` on own classes whose field names are plain identifiers (the
    real one pastes field names into source that it ``exec``s)."""

    def wrap(c: Any) -> Any:
        _check_field_names(_own_class(c, "dataclass()"))
        out = _real_dataclass(c, **kwargs)
        if out is not c:  # slots=True builds a new class
            class_guards.register_class(out)
        return out

    return wrap if cls is None else wrap(cls)


_FunctionType = type(update_wrapper)
_real_total_ordering = functools.total_ordering
_real_dataclass: Any = None


def _bind_dataclasses() -> None:
    global _real_dataclass
    import dataclasses

    _real_dataclass = dataclasses.dataclass


_bind_dataclasses()

#: the highest recursion limit a program may set (``sys.setrecursionlimit``): deep enough for
#: the recursive searches SPADE's games write, shallow enough for the worker's C stack
RECURSION_CAP = 10_000


def setrecursionlimit(limit: Any) -> None:
    """``sys.setrecursionlimit`` capped at :data:`RECURSION_CAP` (and never below the
    limit the worker started with, which the sandbox's own code needs)."""
    import sys

    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError("setrecursionlimit() takes an int")
    sys.setrecursionlimit(max(_START_LIMIT, min(limit, RECURSION_CAP)))


def _start_limit() -> int:
    import sys

    return sys.getrecursionlimit()


_START_LIMIT = _start_limit()

#: replacements: module -> name -> object (applied after picking the allow-list)
REPLACE: dict[str, dict[str, Any]] = {
    "sys": {"setrecursionlimit": setrecursionlimit},
    "functools": {"update_wrapper": update_wrapper, "wraps": wraps, "total_ordering": total_ordering},
    "dataclasses": {"dataclass": dataclass},
    "operator": {"attrgetter": guards.attrgetter, "methodcaller": guards.methodcaller},
}
