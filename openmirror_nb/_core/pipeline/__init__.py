"""The push pipeline: validate, normalize, diff or convert changes, stage on Spark, publish.

By job: ``inputs`` (what ``db.push`` takes besides a Spark DataFrame), ``feeds`` (change-feed
conventions -> change rows), ``keystate`` (what was last pushed: row hashes, base and deltas,
buckets, the snapshot diff), ``push`` (one push, end to end: ``push.run``) and ``delta`` (Delta
tables read on Spark, and ``db.sync_delta``: ``delta.sync``).
"""
