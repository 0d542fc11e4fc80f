"""Structured Streaming into the landing zone, exactly once per micro-batch and table.

``sink`` is the ``foreachBatch`` function (``db.batch_sink``), ``route`` splits and checks a batch
that feeds many tables, ``query_record`` remembers which incarnation of each table a query
started on, and ``stream`` starts a query (``db.mirror_stream``).
"""
