-- pkbw run store, schema 7 (issue 31: variable-length outputs). A tensor result of an output whose
-- leading dimension is variable keeps its bound and the length each side reported
-- (docs/formats.md "Variable-length outputs"); the three are NULL for a fixed-shape output and in
-- every row written before schema 7.

ALTER TABLE tensor_results ADD COLUMN length_bound INTEGER;
ALTER TABLE tensor_results ADD COLUMN ref_length INTEGER;
ALTER TABLE tensor_results ADD COLUMN cand_length INTEGER;
