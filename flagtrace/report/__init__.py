"""Reporters: one module per output format; each reads only ``flagtrace.model``."""
