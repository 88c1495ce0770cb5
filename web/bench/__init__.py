"""The cross-browser comparison bench: runs WebNN graphs on every implementation each browser offers (the
polyfill, native WebNN per context variant) and on the CPython core, compares them, and writes a report.

Modules: cases (WPT vectors, graph files), probe (what a browser offers), session (browsers and the bench
page), reference (CPython), compare (tolerances, pairwise errors), results (JSON lines), report (HTML),
routes (/reports/ on the dev server), pytest_plugin, cli (`python -m web.bench`)."""
