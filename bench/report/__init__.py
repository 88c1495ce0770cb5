"""Run reports: a self-contained report.html per run directory (inline CSS and SVG, no scripts), and the
/reports/ pages of the dev server (routes.py).  comparison.py reports a comparison run, perf.py a perf run,
writer.py picks one by the run's kind.  The package itself imports nothing: the dev server's /reports/ stays
light (no NumPy)."""
