"""What both engines share and neither owns: row mapping, FTS5's term rules, the derived robot id."""
