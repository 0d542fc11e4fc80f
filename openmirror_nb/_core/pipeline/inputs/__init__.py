"""What ``db.push`` takes besides a Spark DataFrame (pandas, Arrow), made a Spark DataFrame."""
