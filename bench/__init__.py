"""The cross-browser bench: runs WebNN graphs on every implementation each browser offers (the polyfill, native
WebNN per context variant) and on the CPython core, compares them, times the polyfill against its peers, and
writes a report.  Manual: docs/bench.md.

    cases/      what runs: WPT vectors, graph files, TFLite models, models through real clients (select.py)
    targets/    where it runs: a Target and the Session interface; playwright.py (local and run-server), probe.py
    run/        the comparison: planning and running items (runner.py), the CPython reference, the comparisons
    perf/       the performance bench (`make bench`) and its modes: startup, soak, dispatch, network, models
    report/     report.html of a run, and /reports/ on the dev server
    pages/      the pages the browsers open (/bench/, /perf/, /clients/) and the routes serving them
    results.py  the run directory: run.json, results.jsonl; the same model whichever target ran the cases
    server.py   the dev server with the bench's pages, in a thread
    cli.py      `python -m bench`; pytest_plugin.py and suite.py: the same bench as pytest tests
"""
