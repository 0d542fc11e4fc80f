"""The panels' implementation; ``openmirror_nb.widgets`` is their public home."""
