"""Change-feed conventions (an operation column, Debezium events) turned into change rows."""
