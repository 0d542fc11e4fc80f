"""A loopback ADLS Gen2 endpoint over HTTPS for tests and benches: the DFS REST calls plus the few
Blob calls (HEAD, ranged GET, lease, metadata) that ``azure-storage-file-datalake`` sends. Azurite has
no DFS.

In memory and thread-safe; a manual clock drives lease expiry, ``page_size`` forces listing
continuation, ``latency`` models a network round trip, ``inject`` fails chosen requests, ``refuse``
answers 401 or 403 to all of them from a chosen one on (``challenge`` adds the ``WWW-Authenticate``
header Azure Storage sends with a 401), ``at`` changes the server (e.g. revokes a token) at a chosen
request, and every request is recorded (``requests``), as is every replacement of committed file
content (``overwrites``).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlparse

ACCOUNT = "onelake"
TOKEN = "loopback-token"  # a fake bearer token; never a real credential
# What Azure Storage sends with a 401 to a bearer token: where to get one, and for which resource.
CHALLENGE = (
    "Bearer authorization_uri=https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000"
    "/oauth2/authorize resource_id=https://storage.azure.com"
)
REFUSALS = {401: "InvalidAuthenticationInfo", 403: "AuthorizationPermissionMismatch"}


class StaticTokenCredential:
    """A ``TokenCredential`` returning a fixed token (azure-core duck typing is enough)."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.calls = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        self.calls += 1
        return AccessToken(self.token, int(time.time()) + 3600)


class TokenSequence:
    """A ``TokenCredential`` handing out ``tokens`` in turn (the last one again when they run
    out), as a credential refreshing an expired token does."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = tokens
        self.calls = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        self.calls += 1
        return AccessToken(self.tokens[min(self.calls, len(self.tokens)) - 1], int(time.time()) + 3600)


class NoIdentityCredential:
    """A ``TokenCredential`` that finds no identity, as ``DefaultAzureCredential`` does outside
    Azure without ``az login``: every call raises ``ClientAuthenticationError``."""

    def __init__(self) -> None:
        self.calls = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.exceptions import ClientAuthenticationError

        self.calls += 1
        raise ClientAuthenticationError("no identity found (test)\nsecond line of the chain's story")


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """Write a self-signed certificate for 127.0.0.1 and its key; return (cert, key) paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2)).add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "loopback-cert.pem", folder / "loopback-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


# x-ms-error-code -> (HTTP status, message), as the ADLS Gen2 / Blob REST references list them.
ERRORS = {
    "ConditionNotMet": (412, "The condition specified using HTTP conditional header(s) is not met."),
    "SourceConditionNotMet": (
        412,
        "The source condition specified using HTTP conditional header(s) is not met.",
    ),
    "PathAlreadyExists": (409, "The specified path already exists."),
    "PathConflict": (409, "The path exists with another resource type."),
    "PathNotFound": (404, "The specified path does not exist."),
    "BlobNotFound": (404, "The specified blob does not exist."),
    "FilesystemNotFound": (404, "The specified filesystem does not exist."),
    "ContainerAlreadyExists": (409, "The specified filesystem already exists."),
    "SourcePathNotFound": (404, "The source path for a rename operation does not exist."),
    "RenameDestinationParentPathNotFound": (
        404,
        "The parent directory of the destination path does not exist.",
    ),
    "InvalidDestinationPath": (409, "The destination path is an existing directory."),
    "DirectoryNotEmpty": (
        409,
        "The recursive query parameter value must be true to delete a non-empty directory.",
    ),
    "InvalidFlushPosition": (
        400,
        "The uploaded data is not contiguous or the position is not the file length.",
    ),
    "InvalidHeaderValue": (400, "The value for one of the HTTP headers is not in the correct format."),
    "InvalidRange": (416, "The range specified is invalid for the current size of the resource."),
    "InvalidAuthenticationInfo": (401, "Server failed to authenticate the request."),
    "AuthorizationPermissionMismatch": (
        403,
        "This request is not authorized to perform this operation using this permission.",
    ),
    "LeaseIdMissing": (412, "There is currently a lease on the resource and no lease ID was specified."),
    "LeaseIdMismatch": (412, "The lease ID specified did not match the lease ID for the resource."),
    "LeaseNotPresent": (412, "There is currently no lease on the resource."),
    "LeaseAlreadyPresent": (409, "There is already a lease present."),
    "LeaseNotPresentWithLeaseOperation": (409, "There is currently no lease on the resource."),
    "LeaseIdMismatchWithLeaseOperation": (
        409,
        "The lease ID specified did not match the lease ID for the blob.",
    ),
    "LeaseIsBrokenAndCannotBeRenewed": (409, "The lease ID matched, but the lease has been broken."),
    "UnsupportedRequest": (400, "The request is not served by the loopback server."),
}


class Fail(Exception):
    """An error answer: status, ``x-ms-error-code`` and message."""

    def __init__(self, code: str, message: str = "", *, status: int | None = None) -> None:
        super().__init__(code)
        known_status, known_message = ERRORS.get(code, (400, code))
        self.status, self.code, self.message = status or known_status, code, message or known_message


@dataclass
class Node:
    is_dir: bool
    data: bytes = b""
    pending: bytearray = field(default_factory=bytearray)
    etag: str = ""
    mtime: float = 0.0
    created: float = 0.0
    lease_id: str | None = None
    lease_until: float | None = None  # None with a lease_id: infinite
    lease_seconds: int = -1
    broken: bool = False
    metadata: dict[str, str] = field(default_factory=dict)  # x-ms-meta-*, kept across a rename


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str  # "<filesystem>/<path>", unquoted, without the account
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names; Authorization redacted
    status: int


class DfsStore:
    """The file systems and the protocol rules (conditions, leases, renames), under one lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.fs: dict[str, dict[str, Node]] = {}
        self.offset = 0.0
        self.overwrites: list[str] = []

    def now(self) -> float:
        return time.time() + self.offset

    def touch(self, node: Node) -> None:
        node.mtime = self.now()
        node.etag = f'"0x{uuid.uuid4().hex[:16].upper()}"'

    def tree(self, fs: str) -> dict[str, Node]:
        if fs not in self.fs:
            raise Fail("FilesystemNotFound")
        return self.fs[fs]

    def leased(self, node: Node) -> bool:
        if node.lease_id is None or node.broken:
            return False
        return node.lease_until is None or self.now() < node.lease_until

    def lease_state(self, node: Node) -> str:
        if self.leased(node):
            return "leased"
        return "broken" if node.broken else ("expired" if node.lease_id else "available")

    def check_lease(self, node: Node | None, lease_id: str | None) -> None:
        """Writes and deletes of a leased path must carry its lease id (412 otherwise)."""
        if node is None:
            return
        if self.leased(node):
            if not lease_id:
                raise Fail("LeaseIdMissing")
            if lease_id != node.lease_id:
                raise Fail("LeaseIdMismatch")
        elif lease_id:
            raise Fail("LeaseNotPresent")

    @staticmethod
    def check_conditions(node: Node | None, h: dict[str, str], prefix: str = "") -> None:
        match, none_match = h.get(f"{prefix}if-match"), h.get(f"{prefix}if-none-match")
        failed = "SourceConditionNotMet" if prefix else "ConditionNotMet"
        if match and (node is None or (match != "*" and match != node.etag)):
            raise Fail(failed)
        if none_match == "*" and node is not None and not prefix:
            raise Fail("PathAlreadyExists")
        if none_match and node is not None and none_match in ("*", node.etag):
            raise Fail(failed)

    def make_parents(self, tree: dict[str, Node], path: str) -> None:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            parent = "/".join(parts[:i])
            node = tree.get(parent)
            if node is None:
                tree[parent] = node = Node(is_dir=True, created=self.now())
                self.touch(node)
            elif not node.is_dir:
                raise Fail("PathConflict", f"{parent!r} is a file.")

    def create(self, fs: str, path: str, resource: str, h: dict[str, str]) -> Node:
        tree = self.tree(fs)
        node = tree.get(path)
        self.check_conditions(node, h)
        if node is not None and node.is_dir != (resource == "directory"):
            raise Fail("PathConflict")
        if node is not None and node.is_dir:
            return node  # creating an existing directory leaves it (and its children) alone
        self.check_lease(node, h.get("x-ms-lease-id"))
        self.make_parents(tree, path)
        if node is not None and node.data:
            self.overwrites.append(f"{fs}/{path}")
        fresh = Node(is_dir=resource == "directory", created=self.now())
        if node is not None:  # a file keeps its lease across an overwrite
            fresh.lease_id, fresh.lease_until, fresh.lease_seconds = (
                node.lease_id,
                node.lease_until,
                node.lease_seconds,
            )
        self.touch(fresh)
        tree[path] = fresh
        return fresh

    def rename(self, fs: str, path: str, source: str, h: dict[str, str]) -> Node:
        src_fs, _, src_path = source.partition("/")
        src_tree, tree = self.tree(src_fs), self.tree(fs)
        node = src_tree.get(src_path)
        if node is None:
            raise Fail("SourcePathNotFound")
        self.check_conditions(node, h, prefix="x-ms-source-")
        self.check_lease(node, h.get("x-ms-source-lease-id") or None)
        dest = tree.get(path)
        self.check_conditions(dest, h)
        parent = path.rpartition("/")[0]
        if parent and (parent not in tree or not tree[parent].is_dir):
            raise Fail("RenameDestinationParentPathNotFound")
        if dest is not None:
            if dest.is_dir:
                raise Fail("InvalidDestinationPath")
            # Path - Create: without a lease id an existing destination's lease is broken, then replaced.
            if h.get("x-ms-lease-id"):
                self.check_lease(dest, h["x-ms-lease-id"])
            self.overwrites.append(f"{fs}/{path}")
        moved = [(k, v) for k, v in src_tree.items() if k == src_path or k.startswith(src_path + "/")]
        for key, _ in moved:
            del src_tree[key]
        for key, value in moved:
            tree[path + key[len(src_path) :]] = value
        return node

    def delete(self, fs: str, path: str, recursive: bool, h: dict[str, str]) -> None:
        tree = self.tree(fs)
        node = tree.get(path)
        if node is None:
            raise Fail("PathNotFound")
        self.check_conditions(node, h)
        children = [k for k in tree if k.startswith(path + "/")]
        if node.is_dir and children and not recursive:
            raise Fail("DirectoryNotEmpty")
        self.check_lease(node, h.get("x-ms-lease-id"))
        for key in [path, *children]:
            del tree[key]

    def append(self, node: Node, position: int, body: bytes, h: dict[str, str]) -> None:
        self.check_lease(node, h.get("x-ms-lease-id"))
        if position != len(node.data) + len(node.pending):
            raise Fail("InvalidFlushPosition")
        node.pending.extend(body)

    def flush(self, fs: str, path: str, node: Node, position: int, h: dict[str, str]) -> None:
        self.check_conditions(node, h)
        self.check_lease(node, h.get("x-ms-lease-id"))
        if position != len(node.data) + len(node.pending):
            raise Fail("InvalidFlushPosition")
        if node.data and node.pending:
            self.overwrites.append(f"{fs}/{path}")  # appending to committed content changes a published file
        node.data, node.pending = bytes(node.data) + bytes(node.pending), bytearray()
        self.touch(node)

    def set_metadata(self, node: Node, h: dict[str, str]) -> None:
        """Set Blob Metadata: replaces the whole set; a leased blob needs its lease id (412 otherwise)."""
        self.check_conditions(node, h)
        self.check_lease(node, h.get("x-ms-lease-id"))
        node.metadata = {k[len("x-ms-meta-") :]: v for k, v in h.items() if k.startswith("x-ms-meta-")}
        self.touch(node)

    def lease(self, node: Node, h: dict[str, str]) -> tuple[int, dict[str, str]]:
        action, given = h.get("x-ms-lease-action", ""), h.get("x-ms-lease-id")
        now = self.now()
        if action == "acquire":
            seconds = int(h.get("x-ms-lease-duration", "-1"))
            if seconds != -1 and not 15 <= seconds <= 60:
                raise Fail("InvalidHeaderValue", "x-ms-lease-duration must be -1 or 15-60.")
            proposed = h.get("x-ms-proposed-lease-id") or str(uuid.uuid4())
            if self.leased(node) and node.lease_id != proposed:
                raise Fail("LeaseAlreadyPresent")
            node.lease_id, node.lease_seconds, node.broken = proposed, seconds, False
            node.lease_until = None if seconds == -1 else now + seconds
            return 201, {"x-ms-lease-id": proposed}
        if node.lease_id is None:
            raise Fail("LeaseNotPresentWithLeaseOperation")
        if action == "break":
            node.broken, node.lease_until = True, now
            return 202, {"x-ms-lease-time": "0"}
        if given != node.lease_id:
            raise Fail("LeaseIdMismatchWithLeaseOperation")
        if action == "renew":
            if node.broken:
                raise Fail("LeaseIsBrokenAndCannotBeRenewed")
            node.lease_until = None if node.lease_seconds == -1 else now + node.lease_seconds
            return 200, {"x-ms-lease-id": given}
        if action == "release":
            node.lease_id, node.lease_until, node.broken = None, None, False
            return 200, {}
        raise Fail("InvalidHeaderValue", f"Unsupported x-ms-lease-action {action!r}.")

    def listing(self, fs: str, q: dict[str, str], page_size: int) -> tuple[list[dict[str, Any]], str | None]:
        tree = self.tree(fs)
        folder = q.get("directory", "").strip("/")
        if folder and (folder not in tree or not tree[folder].is_dir):
            raise Fail("PathNotFound")
        prefix = folder + "/" if folder else ""
        recursive = q.get("recursive", "false").lower() == "true"
        names = sorted(k for k in tree if k.startswith(prefix) and (recursive or "/" not in k[len(prefix) :]))
        start = q.get("continuation")
        if start:
            after = base64.urlsafe_b64decode(start.encode()).decode()
            names = [n for n in names if n > after]
        size = min(page_size, int(q.get("maxResults", page_size) or page_size))
        page, rest = names[:size], names[size:]
        token = base64.urlsafe_b64encode(page[-1].encode()).decode() if rest else None
        return [self.path_json(n, tree[n]) for n in page], token

    @staticmethod
    def path_json(name: str, node: Node) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": name, "contentLength": str(len(node.data)), "etag": node.etag,
            "lastModified": formatdate(node.mtime, usegmt=True), "owner": "$superuser",
            "group": "$superuser", "permissions": "rwxr-x---",
        }  # fmt: skip
        if node.is_dir:
            entry["isDirectory"] = "true"
        return entry


class DfsServer(ThreadingHTTPServer):
    """``with DfsServer(cert, key) as server:`` serves on ``server.account_url`` until closed."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, cert: Path, key: Path, *, tokens: tuple[str, ...] = (TOKEN,)) -> None:
        super().__init__(("127.0.0.1", 0), DfsHandler)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.store = DfsStore()
        self.tokens = set(tokens)
        self.page_size = 5000
        self.latency = 0.0
        self.requests: list[Recorded] = []
        self._faults: list[tuple[Callable[[Recorded], bool], int, str, bool]] = []
        self._triggers: list[tuple[Callable[[Recorded], bool], Callable[[], None]]] = []
        self.refusing: int | None = None
        self.challenge = False
        self.in_flight = self.max_in_flight = 0
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def account_url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}/{ACCOUNT}"

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        # Wrap without handshaking so the TLS handshake runs in the request thread, not the accept loop.
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)

    def advance(self, seconds: float) -> None:
        """Move the server clock forward (leases expire without waiting)."""
        with self.store.lock:
            self.store.offset += seconds

    def create_filesystem(self, name: str) -> None:
        with self.store.lock:
            self.store.fs.setdefault(name, {})

    def inject(
        self,
        when: Callable[[Recorded], bool],
        *,
        status: int = 400,
        code: str = "InjectedFault",
        after: bool = False,
    ) -> None:
        """Fail the next request matching ``when``; with ``after`` it is carried out first and only
        its answer is lost. A 400 is not retried by the SDK; a 500 is."""
        self._faults.append((when, status, code, after))

    def refuse(self, status: int | None, *, when: Callable[[Recorded], bool] | None = None) -> None:
        """Answer ``status`` to every request, from the first one matching ``when`` (by default
        the next) until ``refuse(None)``: 401 InvalidAuthenticationInfo, as for a token the service
        does not accept, or 403 AuthorizationPermissionMismatch, as for an identity without access."""
        if when is None:
            self.refusing = status
        else:
            self.at(when, lambda: setattr(self, "refusing", status))

    def at(self, when: Callable[[Recorded], bool], action: Callable[[], None]) -> None:
        """Run ``action()`` once, just before serving the first request matching ``when``."""
        with self.store.lock:
            self._triggers.append((when, action))

    def run_triggers(self, rec: Recorded) -> None:
        with self.store.lock:
            for i, (when, action) in enumerate(self._triggers):
                if when(rec):
                    del self._triggers[i]
                    action()
                    return

    def take_fault(self, rec: Recorded) -> tuple[int, str, bool] | None:
        with self.store.lock:
            for i, (when, status, code, after) in enumerate(self._faults):
                if when(rec):
                    del self._faults[i]
                    return status, code, after
        return None

    def file(self, fs: str, path: str) -> bytes | None:
        with self.store.lock:
            node = self.store.fs.get(fs, {}).get(path)
            return None if node is None or node.is_dir else node.data

    def close(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> DfsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DfsHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK reuses connections
    server: DfsServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_PUT(self) -> None:
        self.handle_any()

    do_GET = do_HEAD = do_PATCH = do_POST = do_DELETE = do_PUT

    def handle_any(self) -> None:
        url = urlparse(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        if parts and parts[0] == ACCOUNT:
            parts = parts[1:]
        q = dict(parse_qsl(url.query, keep_blank_values=True))
        h = {k.lower(): v for k, v in self.headers.items()}
        body = self.rfile.read(int(h.get("content-length") or 0))
        shown = {k: ("Bearer ***" if k == "authorization" else v) for k, v in h.items()}
        fs, path = (parts[0] if parts else ""), "/".join(parts[1:])
        rec = Recorded(self.command, "/".join(parts), q, shown, 0)
        with self.server.store.lock:
            self.server.in_flight += 1
            self.server.max_in_flight = max(self.server.max_in_flight, self.server.in_flight)
        if self.server.latency:
            time.sleep(self.server.latency)
        try:
            self.server.run_triggers(rec)
            if self.server.refusing:
                raise Fail(REFUSALS[self.server.refusing])
            if h.get("authorization", "").removeprefix("Bearer ") not in self.server.tokens:
                raise Fail("InvalidAuthenticationInfo")
            fault = self.server.take_fault(rec)
            if fault and not fault[2]:
                raise Fail(fault[1], status=fault[0])
            with self.server.store.lock:
                status, headers, payload = self.dispatch(fs, path, q, h, body)
            if fault:
                raise Fail(
                    fault[1], "The answer to a completed request was lost (injected).", status=fault[0]
                )
        except Fail as err:
            status, headers = err.status, {"x-ms-error-code": err.code}
            payload = (
                b""
                if self.command == "HEAD"
                else json.dumps({"error": {"code": err.code, "message": err.message}}).encode()
            )
            headers["Content-Type"] = "application/json"
            if status == 401 and self.server.challenge:
                headers["WWW-Authenticate"] = CHALLENGE
        self.server.requests.append(Recorded(rec.method, rec.path, q, shown, status))
        with self.server.store.lock:
            self.server.in_flight -= 1
        self.send_response(status)
        headers.setdefault("x-ms-request-id", str(uuid.uuid4()))
        headers.setdefault("x-ms-version", h.get("x-ms-version", "2021-06-08"))
        for name, value in headers.items():
            self.send_header(name, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def dispatch(
        self, fs: str, path: str, q: dict[str, str], h: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        store, method = self.server.store, self.command
        if not path:
            return self.filesystem(fs, q, h)
        if (method == "PUT" and q.get("comp") == "lease") or (method == "POST" and "x-ms-lease-action" in h):
            node = store.tree(fs).get(path)
            if node is None:
                raise Fail("BlobNotFound")
            status, extra = store.lease(node, h)
            return status, {**self.stamp(node), **extra}, b""
        if method == "PUT" and "x-ms-rename-source" in h:
            source = unquote(urlparse(h["x-ms-rename-source"]).path).strip("/")
            if source.split("/")[0] == ACCOUNT and ACCOUNT not in store.fs:
                source = source[len(ACCOUNT) + 1 :]  # a full-URL source (what some OneLake clients send)
            return 201, self.stamp(store.rename(fs, path, source, h)), b""
        if method == "PUT" and q.get("resource") in ("file", "directory"):
            return 201, self.stamp(store.create(fs, path, q["resource"], h)), b""
        if method == "DELETE":
            store.delete(fs, path, q.get("recursive", "false").lower() == "true", h)
            return 200, {}, b""
        node = store.tree(fs).get(path)
        if node is None:
            code = "PathNotFound" if method == "PATCH" else "BlobNotFound"
            raise Fail(code)
        if method == "PUT" and q.get("comp") == "metadata":
            store.set_metadata(node, h)
            return 200, self.stamp(node), b""
        if method == "PATCH" and q.get("action") == "append":
            store.append(node, int(q.get("position", "0")), body, h)
            return 202, {}, b""
        if method == "PATCH" and q.get("action") == "flush":
            store.flush(fs, path, node, int(q.get("position", "0")), h)
            return 200, self.stamp(node), b""
        if method in ("HEAD", "GET"):
            return self.read(node, h)
        raise Fail("UnsupportedRequest", f"{method} {self.path} is not served by the loopback server.")

    def filesystem(self, fs: str, q: dict[str, str], h: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        store, method = self.server.store, self.command
        if method == "PUT":
            if fs in store.fs:
                raise Fail("ContainerAlreadyExists")
            store.fs[fs] = {}
            return 201, {"ETag": '"0x1"', "Last-Modified": formatdate(usegmt=True)}, b""
        if method == "DELETE":
            store.fs.pop(fs, None)
            return 202, {}, b""
        if method == "GET" and q.get("resource") == "filesystem":
            paths, token = store.listing(fs, q, self.server.page_size)
            extra = {"x-ms-continuation": token} if token else {}
            return 200, {"Content-Type": "application/json", **extra}, json.dumps({"paths": paths}).encode()
        store.tree(fs)
        return 200, {"ETag": '"0x1"', "Last-Modified": formatdate(usegmt=True)}, b""

    def read(self, node: Node, h: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        store = self.server.store
        headers = {
            **self.stamp(node),
            "Content-Type": "application/octet-stream",
            "x-ms-blob-type": "BlockBlob",
            "x-ms-creation-time": formatdate(node.created, usegmt=True),
            "x-ms-lease-state": store.lease_state(node),
            "x-ms-lease-status": "locked" if store.leased(node) else "unlocked",
        }
        if store.leased(node):
            headers["x-ms-lease-duration"] = "infinite" if node.lease_until is None else "fixed"
        headers.update({f"x-ms-meta-{k}": v for k, v in node.metadata.items()})
        if node.is_dir:
            headers["x-ms-meta-hdi_isfolder"] = "true"
        data = node.data
        wanted = h.get("x-ms-range") or h.get("range")
        if wanted and not data and self.command == "GET":
            raise Fail("InvalidRange")
        if wanted and data:
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            headers["Content-Length"] = str(end - start + 1)
            return 206, headers, b"" if self.command == "HEAD" else data[start : end + 1]
        headers["Content-Length"] = str(len(data))
        return 200, headers, b"" if self.command == "HEAD" else data

    @staticmethod
    def stamp(node: Node) -> dict[str, str]:
        return {"ETag": node.etag, "Last-Modified": formatdate(node.mtime, usegmt=True)}


def start_server(folder: Path | None = None) -> tuple[DfsServer, Path]:
    """A running server and the path of the certificate clients must trust."""
    folder = folder or Path(tempfile.mkdtemp(prefix="dfs-loopback-"))
    cert, key = make_certificate(folder)
    return DfsServer(cert, key), cert
