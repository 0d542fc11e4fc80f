"""``db.mirror_plan`` in a child process, for the fault chain (``test_live_faults``): ``python -m
tests.streaming.live_child DB PLAN CDC_JSON BOOTSTRAP CHECKPOINT`` runs one ``available_now`` pass
and ends, or dies where ``OPENMIRROR_CRASH_AT`` says (the driver killed as SIGKILL would). Small
files and batches, so that a kill can fall between two renames of one push."""

from __future__ import annotations

import json
import sys


def main(root: str, plan: str, cdc: str, bootstrap: str, checkpoint: str) -> None:
    import openmirror_nb as om
    from openmirror_nb._core.pipeline.feeds import changes
    from openmirror_nb._core.runtime import get_spark

    changes.SMALL_FEED_BYTES = -1  # a batch's feed shuffled by key, in parts, as a larger one is
    get_spark().conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    db = om.connect(root, lock_timeout=120)
    live = db.mirror_plan(
        om.load_plan(plan),
        kafka=om.Kafka(bootstrap_servers=bootstrap),
        checkpoint=checkpoint,
        cdc=om.Cdc(**json.loads(cdc)),
        max_offsets_per_trigger=400,
        rows_per_file=50,
        parallel=1,
        progress=False,
    )
    live.await_termination()
    print("applied", json.dumps({t: list(p) for t, p in live.applied().items()}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
