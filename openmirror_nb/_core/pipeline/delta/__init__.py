"""Delta tables as a source (``db.sync_delta``, ``om.read_delta``), read on Spark with or without
Spark's Delta reader.

``table_log`` reads the log (through ``deltalake``, and the commits as they are),
``deletion_vectors`` decodes deletion vectors, ``columns`` maps logical to physical columns,
``scan`` reads a list of files on Spark, ``feed`` plans a change data feed from the commits,
``reader`` puts them together, ``schema_check`` decides whether a sync may go on, and ``sync``
runs ``db.sync_delta`` (a push of the feed, or of a snapshot diff) and ``om.read_delta`` over a
``source`` (Spark's Delta reader where the session has Delta, else ``reader``).
"""
