"""The collector's own Prometheus metrics, in a registry of its own (one per collector instance)."""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class CollectorStats:
    """Counters of received, stored, rejected, spooled and quarantined spans; queue depth; the writer."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.spans_received = Counter(
            "evallens_collector_spans_received", "Spans received in export requests.", registry=self.registry
        )
        self.spans_stored = Counter(
            "evallens_collector_spans_stored", "Spans committed to PostgreSQL.", registry=self.registry
        )
        self.spans_rejected = Counter(
            "evallens_collector_spans_rejected", "Spans rejected as invalid.", registry=self.registry
        )
        self.spans_spooled = Counter(
            "evallens_collector_spans_spooled", "Spans written to the local spool.", registry=self.registry
        )
        self.spans_quarantined = Counter(
            "evallens_collector_spans_quarantined",
            "Acknowledged spans PostgreSQL refused, kept in the quarantine (table or dead-letter file).",
            registry=self.registry,
        )
        self.dead_letter_files = Gauge(
            "evallens_collector_dead_letter_files",
            "Quarantine files on disk waiting for PostgreSQL (or set aside as refused).",
            registry=self.registry,
        )
        self.writer_restarts = Counter(
            "evallens_collector_writer_restarts",
            "Times the writer thread failed unexpectedly and was restarted.",
            registry=self.registry,
        )
        self.writer_up = Gauge(
            "evallens_collector_writer_up",
            "1 while the writer thread runs, 0 while it waits to restart.",
            registry=self.registry,
        )
        self.requests_refused = Counter(
            "evallens_collector_requests_refused",
            "Export requests answered with an error, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.queue_spans = Gauge(
            "evallens_collector_queue_spans", "Spans waiting to be written.", registry=self.registry
        )
        self.queue_bytes = Gauge(
            "evallens_collector_queue_bytes", "Request bytes waiting to be written.", registry=self.registry
        )
        self.spool_bytes = Gauge(
            "evallens_collector_spool_bytes", "Bytes in the local spool.", registry=self.registry
        )
        self.flush_seconds = Histogram(
            "evallens_collector_flush_seconds", "Time to write one batch.", registry=self.registry
        )
        self.metric_samples_scraped = Counter(
            "evallens_collector_metric_samples_scraped",
            "Prometheus samples scraped and stored.",
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        """The metrics in Prometheus text format."""
        return bytes(generate_latest(self.registry))
