#!/bin/sh
# Stands in for a pkbw that cannot list its problems (no data directory beside it).
echo "pkbw: no problems folder found beside $0 or in PKBW_DATA_DIR" >&2
exit 3
