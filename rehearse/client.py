"""A minimal HTTPS client for the rehearsal's kube-apiserver: JSON in, JSON out, a bearer token.

Plain urllib: the rehearsal needs a handful of verbs (GET, POST, PATCH) and the API server's own
error words (its Status object), nothing a client library would add.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JSON = "application/json"
#: server-side apply (sigs.k8s.io/structured-merge-diff), as `kubectl apply --server-side` sends it
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass
class Reply:
    """One answer: the HTTP status, the decoded body and the API server's Warning headers."""

    status: int
    body: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        """The API server's own words for a refusal (Status.message), else the raw status."""
        return str(self.body.get("message") or f"HTTP {self.status}")


class ApiClient:
    """Requests to one API server at `base` (https://127.0.0.1:PORT), trusting only `ca_file`."""

    def __init__(self, base: str, token: str, ca_file: Path, timeout: float = 60.0) -> None:
        self.base = base
        self._token = token
        self._timeout = timeout
        self._tls = ssl.create_default_context(cafile=str(ca_file))

    def request(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None,
                content_type: str = JSON) -> Reply:
        """Send one request; every HTTP answer (refusals too) comes back as a Reply."""
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Accept": JSON, "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=self._timeout, context=self._tls) as resp:
                return Reply(resp.status, _decode(resp.read()), resp.headers.get_all("Warning") or [])
        except urllib.error.HTTPError as err:
            return Reply(err.code, _decode(err.read()), err.headers.get_all("Warning") or [])

    def get(self, path: str) -> Reply:
        return self.request("GET", path)


def _decode(raw: bytes) -> dict[str, Any]:
    """The JSON body, or its text under "message" when the server answered with something else."""
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {"message": raw.decode(errors="replace").strip()}
    return value if isinstance(value, dict) else {"message": str(value)}
