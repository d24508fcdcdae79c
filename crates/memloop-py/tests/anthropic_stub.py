"""A loopback LLM speaking Anthropic's Messages wire format
(`POST /v1/messages`), with scripted answers: the write pipeline's
extraction prompt gets one fact (the user's sentence, as said), every other
request a reply naming the first memory its system prompt holds. Records
every request body. Run as a script it serves until killed and prints its
base URL (the examples' CI run uses that)."""

from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class AnthropicStub:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "body": body,
                                      "api_key": self.headers.get("x-api-key")})
                if self.path != "/v1/messages":
                    self.send_error(404)
                    return
                text = stub.answer(body)
                out = json.dumps({
                    "id": f"msg_{len(stub.requests)}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "stub"),
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 100, "output_tokens": 12},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def answer(body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        if isinstance(last, list):
            last = " ".join(p.get("text", "") for p in last if isinstance(p, dict))
        if "Reply with JSON only" in last:
            said = re.search(r'"""\n(.*?)\n"""', last, re.S)
            text = said.group(1).strip() if said else ""
            text = re.sub(r"^(user|User):\s*", "", text.splitlines()[0] if text else "")
            facts = [] if not text else [{
                "text": text, "kind": "fact", "subject": "user", "op": "ADD",
                "importance": 0.7, "confidence": 0.9,
            }]
            return json.dumps({"facts": facts})
        system = body.get("system") or ""
        if isinstance(system, list):
            system = " ".join(p.get("text", "") for p in system if isinstance(p, dict))
        remembered = re.search(r"^- (.+)$", system, re.M)
        if remembered:
            return f"From memory: {remembered.group(1)}"
        return "I have nothing on that yet."

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    stub = AnthropicStub()
    print(stub.base_url, flush=True)
    try:
        stub.thread.join()
    except KeyboardInterrupt:
        sys.exit(0)
