"""One push: its request, checks, flows, staging on Spark, progress and the decision to publish."""
