"""The push pipeline: validate, normalize, diff or convert changes, stage on Spark, publish."""
