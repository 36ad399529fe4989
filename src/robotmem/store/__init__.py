"""The only code that touches SQLite: connection handling, schema, and one module per table group."""
