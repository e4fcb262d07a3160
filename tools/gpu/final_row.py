#!/usr/bin/env python3
"""One markdown row from a `pkbw ... --json` log: | LABEL | status | SECONDS | message |.

Usage: final_row.py LOG LABEL SECONDS. The status and message are those of the log's run_finished
event ("no run_finished" when pkbw ended before it: its last line is shown instead)."""
import json
import sys


def main():
    path, label, seconds = sys.argv[1:4]
    final, last = {}, ""
    with open(path, errors="replace") as log:
        for text in log:
            last = text.strip() or last
            try:
                event = json.loads(text)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "run_finished":
                final = event
    status = final.get("status", "no run_finished")
    message = " ".join(str(final.get("message", "") if final else last).split()).replace("|", "/")
    print(f"| {label} | {status} | {seconds} | {message[:300]} |")


if __name__ == "__main__":
    main()
