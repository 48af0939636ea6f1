"""The quickstart's callback receiver: prints each callback it receives and whether its
signature verifies with ``SANDBOX_SIGNING_SECRET`` (set by ``. var/demo.env``), checked by the
API documentation's own snippet (``callback_verified.py`` beside this file).

    . var/demo.env && python3 examples/callback_receiver.py 9000

Standard library only. A callback that verifies is answered 204; one that does not, 401
(the service then retries it, and its attempts show in the dashboard's callback log).
"""

import http.server
import json
import os
import sys

from callback_verified import callback_verified

SIGNED_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")


class Receiver(http.server.BaseHTTPRequestHandler):
    secret = ""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name: self.headers.get(name) or "" for name in SIGNED_HEADERS}
        try:
            verified = callback_verified(self.secret, headers, body)
            event = json.loads(body)
            what = f"{event['type']} (order {event['subject']}, sequence {event['sequence']})"
        except (ValueError, KeyError, TypeError):
            verified, what = False, f"a body that is not a callback: {body[:80]!r}"
        print(f"{'signature verified' if verified else 'SIGNATURE NOT VERIFIED'}: {what}")
        sys.stdout.flush()
        self.send_response(204 if verified else 401)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the line above is the receiver's whole output."""


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    Receiver.secret = os.environ.get("SANDBOX_SIGNING_SECRET", "")
    if not Receiver.secret:
        sys.exit("SANDBOX_SIGNING_SECRET is not set: run `. var/demo.env` in this shell first.")
    print(f"Receiving callbacks on http://127.0.0.1:{port}/ (Ctrl-C stops)", flush=True)
    http.server.HTTPServer(("127.0.0.1", port), Receiver).serve_forever()


if __name__ == "__main__":
    main()
