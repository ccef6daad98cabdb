"""A loopback stand-in for the Hugging Face Hub's download endpoints, for tests/tools/test_hub.py.

It serves the URL layout and headers huggingface_hub's file_download.py relies on:
  HEAD/GET /{org}/{name}/resolve/{revision}/{file}
      revision: a branch/tag name or a commit hash (percent-encoded, as clients quote it)
      small files: 200 with the body, ETag "<git blob sha1>", Content-Length, X-Repo-Commit
      LFS files (*.safetensors): 302 to /cdn/<sha256> on another host name (localhost vs 127.0.0.1, as the
      Hub's CDN is another host) with X-Repo-Commit,
      X-Linked-Etag "<sha256>" and X-Linked-Size (the Hub's form for LFS)
      errors: 404 with X-Error-Code RepoNotFound / RevisionNotFound / EntryNotFound, 401 GatedRepo when a
      gated repository is asked without "Authorization: Bearer <its token>"
  GET/HEAD /cdn/<sha256>: the bytes, with Range support (206 + Content-Range)

Faults the tests switch on (attributes of HubServer, read per request):
  drops        the next `drops` CDN bodies are cut off half-way (the connection closes mid-file)
  corrupt      CDN bodies have one byte flipped (same length, wrong sha256)
  delay        seconds each CDN GET waits before its body (keeps a transfer in flight)
  extra        GET bodies (small files and CDN) carry this many bytes more than HEAD announced, with a
               Content-Length to match (a server that lies about the size, or a proxy serving another file)
  unsized      small files are announced with no size (HEAD without Content-Length) and their GET is a
               chunked body that never ends
  sent         body bytes the GETs have written so far (what a client let through before stopping)
Every request is logged in `requests` as (method, path, headers dict).

Usage:
  server = HubServer({"org/name": Repo({"main": files})}).start()   # server.url = "http://127.0.0.1:PORT"
  ...; server.stop()
"""
import hashlib
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    """revisions: {branch or tag: {file name: bytes}}; each revision gets a commit hash of its own
    (several names with identical files still get distinct commits). token: when set, the repository is
    gated and needs it."""

    def __init__(self, revisions, token=None):
        self.token = token
        self.commits = {}  # commit hash -> files
        self.refs = {}     # revision name -> commit hash
        for name, files in revisions.items():
            commit = hashlib.sha1(("commit of " + name + repr(sorted(files))).encode()).hexdigest()
            self.commits[commit] = dict(files)
            self.refs[name] = commit


def is_lfs(name):
    return name.endswith(".safetensors")


class HubServer:
    def __init__(self, repos):
        self.repos = repos
        self.blobs = {}  # sha256 -> bytes, what /cdn/ serves
        for repo in repos.values():
            for files in repo.commits.values():
                for name, data in files.items():
                    if is_lfs(name):
                        self.blobs[hashlib.sha256(data).hexdigest()] = data
        self.drops = 0
        self.corrupt = False
        self.delay = 0.0
        self.extra = 0
        self.unsized = False
        self.sent = 0
        self.requests = []
        self.lock = threading.Lock()
        self.httpd = None

    def start(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def ranges(self):
        """The Range headers of the CDN GETs, in order."""
        return [h.get("Range") for m, p, h in self.requests if m == "GET" and p.startswith("/cdn/") and h.get("Range")]


def _make_handler(hub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_HEAD(self):
            self._serve(head=True)

        def do_GET(self):
            self._serve(head=False)

        def _reply(self, status, headers, body=b"", head=False):
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)) if "Content-Length" not in headers else headers["Content-Length"])
            self.end_headers()
            if not head and body:
                self.wfile.write(body)

        def _stream(self, status, headers, data, length):
            """`data` then zero bytes up to `length` (None: chunked, endless), 1 MiB at a time, counting what
            went out, until done or the client hangs up."""
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            if length is None:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(length))
            self.end_headers()
            piece = b"\0" * (1 << 20)
            left = length
            first = True
            try:
                while left is None or left > 0:
                    chunk = data if first else piece
                    first = False
                    if left is not None:
                        chunk = chunk[:left]
                        left -= len(chunk)
                    if length is None:
                        self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                    else:
                        self.wfile.write(chunk)
                    with hub.lock:
                        hub.sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _error(self, status, code, message, head, extra=None):
            headers = {"X-Error-Code": code, "X-Error-Message": message}
            headers.update(extra or {})
            self._reply(status, headers, message.encode(), head)

        def _serve(self, head):
            with hub.lock:
                hub.requests.append((self.command, self.path, dict(self.headers)))
            path = urllib.parse.urlsplit(self.path).path
            if path.startswith("/cdn/"):
                return self._cdn(path[len("/cdn/"):], head)
            parts = path.split("/")
            # ["", org, name, "resolve", revision, file...]
            if len(parts) < 6 or parts[3] != "resolve":
                return self._error(404, "EntryNotFound", "no such route", head)
            repo_id = parts[1] + "/" + parts[2]
            revision = urllib.parse.unquote(parts[4])
            file = urllib.parse.unquote("/".join(parts[5:]))
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(404, "RepoNotFound", "Repository Not Found for url: " + self.path, head)
            if repo.token and self.headers.get("Authorization") != "Bearer " + repo.token:
                return self._error(401, "GatedRepo", "Access to model %s is restricted. You must have access to it "
                                   "and be authenticated to access it." % repo_id, head)
            commit = repo.refs.get(revision, revision if revision in repo.commits else None)
            if commit is None:
                return self._error(404, "RevisionNotFound", "Invalid rev id: " + revision, head)
            files = repo.commits[commit]
            if file not in files:
                return self._error(404, "EntryNotFound", "%s does not exist on %s" % (file, revision), head,
                                   {"X-Repo-Commit": commit})
            data = files[file]
            if is_lfs(file):
                sha = hashlib.sha256(data).hexdigest()
                # The CDN is another host, as on the Hub (cdn-lfs.hf.co): clients must not follow the HEAD's
                # redirect for metadata (huggingface_hub follows same-host ones) nor send the token there.
                port = self.server.server_address[1]
                cdn = "localhost" if not self.headers.get("Host", "").startswith("localhost") else "127.0.0.1"
                return self._reply(302, {"Location": "http://%s:%d/cdn/%s?expires=never" % (cdn, port, sha),
                                         "X-Repo-Commit": commit,
                                         "X-Linked-Etag": '"%s"' % sha, "X-Linked-Size": str(len(data)),
                                         "ETag": '"%s"' % git_blob_sha1(b"lfs pointer " + sha.encode())}, b"", head)
            headers = {"X-Repo-Commit": commit, "ETag": '"%s"' % git_blob_sha1(data),
                       "Content-Type": "application/octet-stream"}
            if hub.unsized:
                if head:  # no size announced at all
                    self.send_response(200)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.close_connection = True
                    return
                return self._stream(200, headers, data, None)
            if hub.extra and not head:
                return self._stream(200, headers, data, len(data) + hub.extra)
            return self._reply(200, headers, data, head)

        def _cdn(self, sha, head):
            data = hub.blobs.get(sha)
            if data is None:
                return self._error(404, "EntryNotFound", "no such blob", head)
            if hub.corrupt:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            start = 0
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[len("bytes="):-1])
                if start >= len(data):
                    return self._reply(416, {"Content-Range": "bytes */%d" % len(data)}, b"", head)
            body = data[start:]
            status = 206 if start else 200
            headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
            if start:
                headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
            if head:
                return self._reply(status, dict(headers, **{"Content-Length": str(len(body))}), b"", True)
            if hub.delay:
                time.sleep(hub.delay)
            if hub.extra:
                return self._stream(status, headers, body, len(body) + hub.extra)
            with hub.lock:
                drop = hub.drops > 0
                if drop:
                    hub.drops -= 1
            if drop:  # announce the whole body, send half, close: the client sees a transfer cut short
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self._reply(status, headers, body)

    return Handler
