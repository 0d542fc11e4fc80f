"""Kafka Connect's encodings of a value, decoded exactly in Spark SQL expressions (no Python UDF:
every row of a Debezium topic goes through them).

- A Connect ``Decimal`` is base64 of its unscaled value, big-endian two's complement: its exact
  text (``decimal_text``), from 64-bit chunks combined in ``decimal(38,0)`` up to 15 bytes, and
  in base-10^9 limbs past that, so that a value of any size has its digits;
- a decimal's text becomes ``decimal(p,s)`` only when that holds it without rounding
  (``exact_decimal``), as a plan's declared types do;
- a time of day (an amount of ms, µs or ns) becomes the text PostgreSQL writes for it (``time_text``);
- an ISO-8601 instant with an offset (``io.debezium.time.ZonedTimestamp``) becomes a timestamp by
  arithmetic on its parts (``zoned_micros``): exact, whatever the session's time zone.

A value none of them holds stops the Spark job with one line naming the table, column and value
(``refused``), before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from openmirror_nb._core.column_types import shown
from openmirror_nb._core.errors import REFUSAL_MARK

if TYPE_CHECKING:
    from pyspark.sql import Column

_HEX = "0123456789ABCDEF"
_ZONED = (  # java.time's ISO_OFFSET_DATE_TIME as Debezium writes it (a year past 9999 with its sign)
    r"^([+-]?[0-9]{4,})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?"
    r"(Z|([+-])([0-9]{2}):([0-9]{2})(:([0-9]{2}))?)$"
)
_LIMB = 1_000_000_000  # base of the limbs a long value's digits are gathered in
_CHUNK = 7  # hex digits a limb step takes in: 2^28 * a limb + carry stays well inside a long


def refused(table: str, column: str, value: Column, why: str) -> Column:
    """A failure of the Spark job: ``Table <table> column '<column>' holds <value>, <why>``."""
    from pyspark.sql import functions as F

    return F.raise_error(
        F.concat(
            F.lit(f"{REFUSAL_MARK}Table {table} column {column!r} holds "), shown(value), F.lit(f", {why}")
        )
    )


def call(name: str, *args: Column | int | str) -> Column:
    """The SQL function ``name`` on columns and literals (``call_function`` is Spark 3.5's and
    takes columns where PySpark's wrappers of 3.5 take only numbers)."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    return F.call_function(name, *(a if isinstance(a, Column) else F.lit(a) for a in args))


def let(value: Column, body: Callable[[Column], Column]) -> Column:
    """``body(value)`` with ``value`` computed once: a lambda's variable stands for it however often
    ``body`` uses it (Spark SQL has no ``let``; an expression used n times is n copies of its tree,
    and copies of copies made one decimal column's plan take Spark many minutes)."""
    from pyspark.sql import functions as F

    return F.element_at(F.transform(F.array(value), body), 1)


def decimal_text(encoded: Column, scale: Column | int) -> Column:
    """The exact text of a Connect ``Decimal``: base64 ``encoded`` unscaled value, ``scale``
    digits after the point (``-0.01``, ``12345678.91``, ``0.000000000000000000001``); a negative
    scale appends zeros. Each step takes the text before it once (regular expressions)."""
    from pyspark.sql import functions as F

    digits = _unscaled_digits(encoded)
    if isinstance(scale, int):
        before = "0" * max(-scale, 0)
        widened = F.concat(digits, F.lit(before)) if before else digits
        shifted = F.regexp_replace(widened, "^(-?)", "$1" + "0" * max(scale, 0))  # room for "0." before
        point = "$1$2.$3" if scale > 0 else "$1$2"
        return F.regexp_replace(shifted, f"^(-?)0*([0-9]+)([0-9]{{{max(scale, 0)}}})$", point)
    after = F.greatest(scale, F.lit(0))
    widened = F.concat(digits, call("repeat", "0", F.greatest(-scale, F.lit(0))))
    shifted = call("regexp_replace", widened, "^(-?)", F.concat(F.lit("$1"), call("repeat", "0", after)))
    pattern = F.concat(F.lit("^(-?)0*([0-9]+)([0-9]{"), after.cast("string"), F.lit("})$"))
    return F.regexp_replace(call("regexp_replace", shifted, pattern, "$1$2.$3"), r"\.$", "")


def _unscaled_digits(encoded: Column) -> Column:
    """The signed decimal digits of the two's complement integer base64 ``encoded`` holds."""
    from pyspark.sql import functions as F

    raw = F.hex(F.unbase64(encoded))
    # Up to 15 bytes (|v| < 2^119): sign-extended to 16, the high 8 read as a signed long and the
    # low 8 as an unsigned one, combined in decimal(38,0), which holds them exactly.
    sign = F.when(F.substring(raw, 1, 1) >= "8", F.lit("F")).otherwise(F.lit("0"))
    extended = call("lpad", raw, 32, sign)
    chunk = "decimal(20,0)"
    high = F.conv(F.substring(extended, 1, 16), 16, -10).cast(chunk)
    low = F.conv(F.substring(extended, 17, 16), 16, 10).cast(chunk)
    small = (high * F.lit(Decimal(2**64)).cast(chunk) + low).cast("decimal(38,0)").cast("string")
    return F.when(F.length(raw) <= 30, small).otherwise(let(raw, _long_digits))


def _long_digits(raw: Column) -> Column:
    """The signed decimal digits of hex two's complement ``raw``, of any length: the magnitude (a
    negative value's complement, plus one) in base-10^9 limbs, least significant first, each 7
    hex digits multiplying them by 2^28 and adding in."""
    from pyspark.sql import functions as F

    negative = F.substring(raw, 1, 1) >= "8"
    flipped = F.when(negative, F.translate(raw, _HEX, _HEX[::-1])).otherwise(raw)
    one = F.when(negative, F.lit(1)).otherwise(F.lit(0)).cast("long")

    def magnitude(bare: Column) -> Column:
        count = F.greatest(F.ceil(F.length(bare) / _CHUNK).cast("int"), F.lit(1))
        padded = call("lpad", bare, count * _CHUNK, "0")
        chunks = F.transform(
            F.sequence(F.lit(0), count - 1),
            lambda i: F.conv(call("substring", padded, i * _CHUNK + 1, _CHUNK), 16, 10).cast("long"),
        )
        start = F.array(F.lit(0).cast("long"))
        limbs = F.aggregate(chunks, start, lambda acc, c: _times_plus(acc, 1 << (4 * _CHUNK), c))
        return let(_times_plus(limbs, 1, one), _limbs_text)

    digits = let(F.regexp_replace(flipped, "^0+", ""), magnitude)
    return F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), digits)


def _limbs_text(limbs: Column) -> Column:
    from pyspark.sql import functions as F

    top = F.element_at(limbs, -1).cast("string")
    rest = F.slice(F.reverse(limbs), 2, 1 << 30)
    return F.concat(top, F.array_join(F.transform(rest, lambda x: F.lpad(x.cast("string"), 9, "0")), ""))


def _times_plus(limbs: Column, factor: int, carry: Column) -> Column:
    """Limbs of ``limbs`` (a number) times ``factor`` plus ``carry``, normalized to base 10^9."""
    from pyspark.sql import functions as F

    def step(state: Column, limb: Column) -> Column:
        total = limb * F.lit(factor) + state["carry"]
        out = F.concat(state["out"], F.array(total % _LIMB))
        return F.struct(out.alias("out"), call("div", total, _LIMB).alias("carry"))

    def finish(done: Column) -> Column:  # the final carry (below 2^28) is one more limb
        return F.when(done["carry"] > 0, F.concat(done["out"], F.array(done["carry"]))).otherwise(done["out"])

    empty = F.array_remove(F.array(F.lit(0).cast("long")), 0)  # array<bigint>, no element
    state = F.struct(empty.alias("out"), carry.alias("carry"))
    return F.aggregate(limbs, state, step, finish)


def exact_decimal(text: Column, precision: int, scale: int, *, table: str, column: str, why: str) -> Column:
    """Decimal ``text`` as ``decimal(precision,scale)`` when that holds it without rounding (at
    most ``precision - scale`` digits before the point, ``scale`` after it but for trailing
    zeros), else a failure (``refused``, ``why`` saying which type and the fix); NULL stays NULL.
    Exact under ANSI and not: the cast only sees values that fit. ``text`` is computed once, its
    tree not copied into each use."""
    from pyspark.sql import functions as F

    target = f"decimal({precision},{scale})"
    fits = f"^(?=[+-]?[0-9])[+-]?0*[0-9]{{0,{precision - scale}}}(\\.[0-9]{{0,{scale}}}0*)?$"

    def checked(value: Column) -> Column:
        exact = F.when(value.rlike(fits), value.cast(target))
        return exact.when(value.isNull(), F.lit(None).cast(target)).otherwise(
            refused(table, column, value, why)
        )

    return let(text, checked)


def time_text(amount: Column, per_second: int) -> Column:
    """A time of day, ``amount`` units (``per_second`` of them a second) after midnight, as
    PostgreSQL writes it: ``12:34:56.789012``, ``00:00:00``, ``24:00:00``; the fraction without
    trailing zeros."""
    from pyspark.sql import functions as F

    digits = len(str(per_second)) - 1
    seconds = call("div", amount, per_second)
    fraction = amount % per_second
    clock = F.format_string(
        "%02d:%02d:%02d", call("div", seconds, 3600), call("div", seconds, 60) % 60, seconds % 60
    )
    tail = F.regexp_replace(F.lpad(fraction.cast("string"), digits, "0"), "0+$", "")
    shown_fraction = F.when(fraction == 0, F.lit("")).otherwise(F.concat(F.lit("."), tail))
    return F.when(amount.isNotNull(), F.concat(clock, shown_fraction))


def zoned_micros(text: Column) -> tuple[Column, Column]:
    """Microseconds since 1970 of an ISO-8601 instant with an offset (``2024-02-29T11:34:56.789012Z``,
    ``…+05:30``), by arithmetic on its parts in the proleptic Gregorian calendar; and whether
    ``text`` is one that a microsecond holds exactly (no digit past the sixth of the fraction)."""
    from pyspark.sql import functions as F

    def part(i: int) -> Column:
        return F.regexp_extract(text, _ZONED, i)

    def number(i: int) -> Column:  # an absent part is NULL (casting "" fails under ANSI)
        return F.when(part(i) != "", part(i)).cast("long")

    matches = text.rlike(_ZONED)
    fraction = F.rpad(F.substring(part(7), 2, 9), 9, "0")  # ".789012" -> "789012000"
    exact = matches & (F.substring(fraction, 7, 3) == "000")
    day = call("make_date", number(1).cast("int"), number(2).cast("int"), number(3).cast("int"))
    local = (
        F.unix_date(day).cast("long") * 86_400_000_000
        + (number(4) * 3600 + number(5) * 60 + number(6)) * 1_000_000
        + F.when(matches, F.substring(fraction, 1, 6)).cast("long")
    )
    offset = (number(10) * 3600 + number(11) * 60 + F.coalesce(number(13), F.lit(0))) * 1_000_000
    signed = F.when(part(8) == "Z", F.lit(0)).when(part(9) == "-", -offset).otherwise(offset)
    return F.when(exact, local - signed), exact
