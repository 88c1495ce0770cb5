"""The comparison: runner.py plans (case x target x implementation) items and runs them through a Session,
reference.py runs a case in the CPython core (and in float64), compare.py judges outputs against each other."""
