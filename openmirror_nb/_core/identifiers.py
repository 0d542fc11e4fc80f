"""How a name becomes one Spark SQL identifier: the only place the toolkit quotes one.

A column, a table part or a ``delta.`path``` is written between backticks with any backtick in it
doubled. Every reference built from a name goes through ``quoted``, ``F.col`` and ``df[...]``
included: unquoted, Spark parses ``a.b`` as a field of a struct and refuses a lone backtick as a
syntax error, so a user's column named ``a.b`` or ``we`ird`` would break the push.
"""

from __future__ import annotations


def quoted(name: str) -> str:
    """``name`` as one identifier that SQL text, ``F.col`` and ``F.expr`` read back unchanged.

    >>> quoted("we`ird"), quoted("a.b")
    ('`we``ird`', '`a.b`')
    """
    return "`" + name.replace("`", "``") + "`"
