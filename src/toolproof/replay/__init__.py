"""Record and replay: trace store, redaction, replay grading, release gate."""
