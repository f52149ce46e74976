"""OTLP trace collector: receive, decode and store spans; scrape Prometheus metrics."""

__all__: list[str] = []
