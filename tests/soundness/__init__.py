"""The soundness oracle: program generator (programs.py), tracer (tracer.py), checks (oracle.py)."""
