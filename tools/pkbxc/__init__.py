"""Support code of tools/pkb_crosscheck.py: a safetensors reader with no `safetensors` package
(safetensors_lite), the layer that makes PKB's references run on gloo and torch 1.13 (emulation), and
the per-problem argument adapters (adapters). docs/problems.md, "Cross-checking against PKB"."""
