"""The internals of openmirror_nb: they may change in any release. What a notebook, a job or a
skin may use is the package root (``import openmirror_nb as om``) and ``openmirror_nb.widgets``."""
