#!/usr/bin/env python3
"""A scripted model for offline agent runs: a TEST DOUBLE, not a model.

Serves the OpenAI chat-completions wire format on 127.0.0.1 (the shape `pkbw agent --model local/...
--base-url http://127.0.0.1:PORT/v1` speaks) and answers each request with the next reply file, in
the order given, as a complete reply (finish_reason "stop", made-up token counts). Once the replies
are used up it answers 400, which pkbw does not retry. Every request body is written to LOG_DIR as
request_<n>.json so that a script can check what the agent sent (the prompt, the verdicts fed back).
Python's standard library only: the GPU machines have no cpp-httplib. Used by tools/gpu/agent_pkb.sh.

Usage: scripted_model.py PORT_FILE LOG_DIR REPLY_FILE...   (writes the chosen port to PORT_FILE)
"""
import http.server
import os
import json
import sys
import threading


def main():
    port_file, log_dir, replies = sys.argv[1], sys.argv[2], sys.argv[3:]
    texts = [open(path, encoding="utf-8").read() for path in replies]
    lock = threading.Lock()
    served = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                n = served[0]
                served[0] += 1
            with open(f"{log_dir}/request_{n + 1}.json", "wb") as out:
                out.write(body)
            if not self.path.endswith("/chat/completions"):
                return self.answer(404, {"error": {"message": f"scripted model: no route {self.path}"}})
            if n >= len(texts):
                return self.answer(400, {"error": {"message": "scripted model: no replies left"}})
            self.answer(200, {
                "id": f"scripted-{n + 1}",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": texts[n]},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 50},
            })

        def answer(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
