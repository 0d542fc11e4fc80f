"""A key-state base kept in hash buckets, so that a diff reads it without shuffling it.

A diff joins the new snapshot's key state with the stored one on the keys, and Spark shuffles
both sides into hash partitions for that join. The stored side is as large as the table. If the
files already hold one hash partition each (Spark's bucket layout: ``..._00003.snappy.parquet``)
and are read with a bucket spec, that side has the join's partitioning as it lies, and only the
new side is shuffled.

Spark writes and reads buckets only through a catalog table, and in Fabric that catalog is the
user's lakehouse, so nothing is registered there. Instead:

- **write**: a base is hash-partitioned on the keys into N partitions (the shuffle it needs
  anyway); while it is written, every row's partition is compared with its key's bucket
  (``misplaced``), and only then are the files renamed with their bucket number;
- **read**: a file relation with the bucket spec is built through Spark's ``DataSource``, an
  internal class. If it is missing or has changed (another Spark version), the state is read
  plainly, which costs the shuffle but gives the same rows.

A layout is claimed (``PushState.buckets``) only when no row was misplaced: a file holding
another bucket's key would make the join miss that key. Deltas are small and reach the join
another way (``pipeline.keystate.snapdiff``), so they are written as they come.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.identifiers import quoted

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from openmirror_nb._core.storage.base import Storage

PLACE = "_om_part"
_FILE = re.compile(r"^part-(\d+)-([^.]+)(\..*)?\.parquet$")


# Rows of key state per bucket (about 6 MB for a one-column key), and so per task of the state's
# shuffle: small tables get few files, large ones the session's full parallelism.
ROWS_PER_BUCKET = 250_000


def count(spark: SparkSession, *, rows: int) -> int:
    """Buckets for a key state of about ``rows`` rows, at most the session's shuffle partitions
    (what Spark would have shuffled it into)."""
    most = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
    return max(1, min(most, -(-rows // ROWS_PER_BUCKET)))


def place(df: DataFrame, *, keys: tuple[str, ...], buckets: int | None) -> DataFrame:
    """``df`` hash-partitioned on the keys into ``buckets`` partitions (unchanged if ``None``).

    A repartition to a given number is never coalesced by adaptive execution, so partition *i*
    stays bucket *i* up to the write.
    """
    from pyspark.sql import functions as F

    return df if buckets is None else df.repartition(buckets, *[F.col(quoted(k)) for k in keys])


def misplaced(keys: tuple[str, ...], buckets: int) -> Column:
    """Observed metric: rows whose partition (``PLACE``) is not their key's bucket."""
    from pyspark.sql import functions as F

    bucket = F.pmod(F.hash(*[F.col(quoted(k)) for k in keys]), F.lit(buckets))
    return F.sum(F.when(bucket != F.col(PLACE), 1).otherwise(0)).alias("misplaced")


def tag(df: DataFrame) -> DataFrame:
    """Each row's partition, taken in the stage that writes it."""
    from pyspark.sql import functions as F

    return df.withColumn(PLACE, F.spark_partition_id())


def name_files(storage: Storage, folder: str, *, local_dir: str | None) -> None:
    """Rename the Parquet files Spark wrote under ``folder`` with their bucket number, the
    task's partition (checksum files alongside, if any, follow their file). ``local_dir``: Spark
    wrote into this local folder instead of the store (see ``StageContext``)."""
    pairs: list[tuple[str, str]] = []
    if local_dir is not None:
        names = [p.name for p in (Path(local_dir) / folder).iterdir()]
    else:
        names = [e.name for e in storage.list_dir(folder)]
    present = set(names)
    for name in names:
        m = _FILE.match(name)
        if m is None:
            continue
        new = f"part-{m.group(1)}-{m.group(2)}_{int(m.group(1)):05d}{m.group(3) or ''}.parquet"
        pairs.append((name, new))
        if f".{name}.crc" in present:
            pairs.append((f".{name}.crc", f".{new}.crc"))

    def move(pair: tuple[str, str]) -> None:
        if local_dir is not None:
            root = Path(local_dir) / folder
            (root / pair[0]).rename(root / pair[1])
        else:
            storage.rename(f"{folder}/{pair[0]}", f"{folder}/{pair[1]}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(move, pairs))


def read(
    spark: SparkSession, *, uris: list[str], schema: StructType, keys: tuple[str, ...], buckets: int
) -> DataFrame | None:
    """The state folders as one relation bucketed on the keys, or ``None`` if this Spark cannot
    build one (the caller then reads them plainly)."""
    from pyspark.sql import DataFrame

    try:
        jvm: Any = spark._jvm
        session: Any = spark._jsparkSession
        utils = jvm.org.apache.spark.api.python.PythonUtils

        def seq(items: list[str]) -> object:
            values = jvm.java.util.ArrayList()
            for item in items:
                values.add(item)
            return utils.toSeq(values)

        option = jvm.scala.Option
        spec = jvm.org.apache.spark.sql.catalyst.catalog.BucketSpec(buckets, seq(list(keys)), seq([]))
        source = jvm.org.apache.spark.sql.execution.datasources.DataSource(
            session,
            "parquet",
            seq(uris),
            option.apply(session.parseDataType(schema.json())),
            seq([]),
            option.apply(spec),
            utils.toScalaMap(jvm.java.util.HashMap()),
            option.apply(None),
        )
        relation = _resolve(source)
        frame = DataFrame(session.baseRelationToDataFrame(relation), spark)
    except Exception:  # an internal API: any failure only means the plain, shuffled read
        return None
    return frame


def _resolve(source: Any) -> Any:
    """``source.resolveRelation(checkFilesExist=True)``: the one parameter on Spark 3.5; Spark 4.1
    added one (``readOnly``), so every later parameter gets Spark's own default, however many."""
    arity = max(
        m.getParameterCount() for m in source.getClass().getMethods() if m.getName() == "resolveRelation"
    )
    defaults = [getattr(source, f"resolveRelation$default${i}")() for i in range(2, arity + 1)]
    return source.resolveRelation(True, *defaults)
