"""What crosses the boundary: input validation, the returned JSON shapes and their serialiser, strict JSON,
and the export file format."""
