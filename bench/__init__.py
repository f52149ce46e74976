"""Benchmarks: run on demand, print figures, never run by tests."""
