"""A loopback Fabric REST API returning the documented mirroring shapes (contract section 7.2).

Workspaces and mirrored databases are listed in pages; ``getTablesMirroringStatus`` is paged with
``continuationToken``; ``throttle`` makes the next N requests answer 429 with ``Retry-After``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlparse

WORKSPACE_ID = "11111111-2222-3333-4444-555555555555"
ITEM_ID = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
TOKEN = "fabric-loopback-token"

TABLES = [
    {
        "sourceSchemaName": "sales",
        "sourceTableName": "orders",
        "status": "Replicating",
        "metrics": {
            "processedBytes": 1247,
            "processedRows": 6,
            "lastSyncDateTime": "2024-10-08T05:07:11.0663362Z",
        },
    },
    {"sourceSchemaName": "dbo", "sourceTableName": "empty", "status": "Snapshotting"},
    {
        "sourceSchemaName": "dbo",
        "sourceTableName": "broken",
        "status": "Failed",
        "metrics": {"processedBytes": 0, "processedRows": 0},
        "error": {
            "errorCode": "InputValidationError",
            "message": "Exception reading the data file. SequenceNumber: 7",
            "moreDetails": [{"errorCode": "InternalError", "message": "No data rows available"}],
        },
    },
]


class FabricApi(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), FabricHandler)
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.throttle = 0
        self.retry_after = "3"
        self.tables_page = 2
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class FabricHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FabricApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.answer()

    do_POST = do_GET

    def answer(self) -> None:
        url = urlparse(self.path)
        query = dict(parse_qsl(url.query))
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.command, url.path, dict(self.headers)))
        if self.headers.get("authorization") != f"Bearer {TOKEN}":
            return self.send(
                401, {"errorCode": "TokenExpired", "message": "Access token is missing or invalid."}
            )
        if self.server.throttle > 0:
            self.server.throttle -= 1
            body = {"errorCode": "RequestBlocked", "message": "Request is blocked by the upstream service."}
            return self.send(429, body, {"Retry-After": self.server.retry_after})
        parts = url.path.strip("/").split("/")
        if self.command == "GET" and parts == ["v1", "workspaces"]:
            return self.paged([{"id": "0" * 8 + "-0000-0000-0000-" + "0" * 12, "displayName": "Other"},
                               {"id": WORKSPACE_ID, "displayName": "Sales"}], query, "value", 1)  # fmt: skip
        if self.command == "GET" and parts == ["v1", "workspaces", WORKSPACE_ID, "mirroredDatabases"]:
            return self.paged(
                [{"id": ITEM_ID, "displayName": "orders_db", "type": "MirroredDatabase"}], query, "value", 5
            )
        if parts[:5] != ["v1", "workspaces", WORKSPACE_ID, "mirroredDatabases", ITEM_ID] or len(parts) != 6:
            return self.send(
                404, {"errorCode": "ItemNotFound", "message": "The requested item was not found."}
            )
        if parts[5] == "getMirroringStatus":
            return self.send(200, {"status": "Running"})
        if parts[5] == "getTablesMirroringStatus":
            return self.paged(TABLES, query, "data", self.server.tables_page)
        return self.send(404, {"errorCode": "NotFound", "message": "No such API."})

    def paged(self, items: list[dict[str, Any]], query: dict[str, str], key: str, size: int) -> None:
        start = int(query.get("continuationToken", "0"))
        more = start + size < len(items)
        body: dict[str, Any] = {key: items[start : start + size]}
        body["continuationToken"] = str(start + size) if more else None
        body["continuationUri"] = f"{self.server.url}{self.path.lstrip('/')}" if more else None
        self.send(200, body)

    def send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
