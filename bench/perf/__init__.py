"""The performance bench (`make bench`, run.py) and the measurements it is made of, each also a mode of
`python -m bench`: models.py (the graphs), dispatch.py (small ops, dispatch overhead, two contexts),
network.py (cold and warm start-up over network profiles), startup.py (start-up by stage), soak.py (the long
run); settle.py waits for a quiet machine, schema.py names what the run and its report share."""
