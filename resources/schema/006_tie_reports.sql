-- pkbw run store, schema 6 (issue 16: tie-explained mismatches). A tensor result whose problem named
-- tie rows for that output (Problem::tie_rows: rows whose reference values depend on a tie in the
-- reference's top-k) keeps the comparison's tie report: the rows, the rule and how the mismatches lie
-- in them, as the protocol's "ties" JSON object (docs/formats.md "Tie reports"). NULL: no tie rows.

ALTER TABLE tensor_results ADD COLUMN ties TEXT;
