"""Delta tables read on Spark without Spark's Delta reader (``db.sync_delta``, ``om.read_delta``).

``table_log`` reads the log (through ``deltalake``, and the commits as they are),
``deletion_vectors`` decodes deletion vectors, ``columns`` maps logical to physical columns,
``scan`` reads a list of files on Spark, ``feed`` plans a change data feed from the commits,
``reader`` puts them together, and ``schema_check`` decides whether a sync may go on.
"""
