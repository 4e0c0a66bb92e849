"""Running a contract over many rows: rows in, one output line per row, a summary
(docs/batch.md). Private: the public names are re-exported by ``runport.application``."""
