#!/usr/bin/python3
"""A hostile S3 endpoint for shell tests: serves a local directory as an S3 service on 127.0.0.1,
then misbehaves as told.

    hostile_s3.py DIR --port-file FILE [--page-size N] [misbehaviours]     (or --root DIR)

Requests are path-style (/<bucket>/<key>); each bucket is a subdirectory of DIR and each object a
file under it (key "p/v1/MANIFEST" is DIR/<bucket>/p/v1/MANIFEST). It answers GET, PUT and DELETE of
objects, multipart uploads (POST ?uploads, PUT ?partNumber&uploadId, POST ?uploadId, DELETE
?uploadId), ListObjectsV2 (GET /<bucket>?list-type=2 with prefix, max-keys and continuation-token
paging, pages of at most --page-size keys, default 1000), PUT bucket, and S3's error documents
(NoSuchBucket, NoSuchKey). Signatures are not checked. Keys are plain path parts only: one with an
empty, "." or ".." part (S3 allows "a/../b") is refused with 400, as no directory can hold it. It listens on a free port, writes that port to
--port-file once it accepts requests, logs one line per request to stderr and exits 0 on SIGTERM.

Misbehaviours; GLOB matches an object's key, or the key less any leading path parts (so 'v1/*.frame'
matches "run/v1/w0-000000.frame" under any store prefix; fnmatch: '*' also crosses '/'); a bucket
request (a listing, PUT bucket) is matched as the key "":
  --repeat-token        every listing is truncated, with the same NextContinuationToken every time
  --html-listing        listings answer 200 with an HTML page
  --trickle GLOB        the answer's body is sent at 2 bytes/s
  --endless GLOB        the answer's body never ends (chunked, bytes without end)
  --extra-bytes GLOB    bytes past the answer's Content-Length, sent a moment after the body
  --fail GLOB:CODE      the answer is HTTP CODE with an S3 error document (repeatable)
Standard library only: run it with /usr/bin/python3.
"""
import argparse
import base64
import fnmatch
import hashlib
import http.server
import os
import signal
import socketserver
import sys
import threading
import time
import urllib.parse
import uuid
from xml.sax.saxutils import escape

ERROR_CODES = {400: "InvalidRequest", 403: "AccessDenied", 404: "NoSuchKey", 409: "Conflict",
               429: "SlowDown", 500: "InternalError", 503: "ServiceUnavailable"}
XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
NS = ' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
HTML = (b"<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n"
        b"<body><h1>Welcome to nginx!</h1><p>If you see this page, the web server works.</p></body></html>\n")
REPEATED_TOKEN = "the-same-token-every-time"


def error_xml(code, message, resource=""):
    return (XML_HEAD + "<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource>"
            "<RequestId>hostile</RequestId></Error>" % (code, escape(message), escape(resource))).encode()


def valid_key(key):
    parts = key.split("/")
    return key != "" and "\0" not in key and all(p not in ("", ".", "..") for p in parts)


class Store:
    """The directory: buckets, objects, multipart uploads (under DIR/.uploads)."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.uploads = os.path.join(self.root, ".uploads")
        os.makedirs(self.uploads, exist_ok=True)

    def bucket_dir(self, bucket):
        return os.path.join(self.root, bucket)

    def has_bucket(self, bucket):
        return not bucket.startswith(".") and os.path.isdir(self.bucket_dir(bucket))

    def path(self, bucket, key):
        return os.path.join(self.bucket_dir(bucket), *key.split("/"))

    def write(self, path, data):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = "%s.hostile-tmp-%s" % (path, uuid.uuid4().hex)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def keys(self, bucket, prefix):
        base = self.bucket_dir(bucket)
        out = []
        for dirpath, _, files in os.walk(base):
            for name in files:
                if ".hostile-tmp-" in name:
                    continue
                key = os.path.relpath(os.path.join(dirpath, name), base).replace(os.sep, "/")
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out, key=lambda k: k.encode())  # S3 lists in UTF-8 byte order


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as S3: connections are reused
    server_version = "hostile-s3"

    def log_message(self, *args):  # one line per request instead (see note())
        pass

    def note(self, code, how=""):
        sys.stderr.write("hostile_s3: %s %s -> %s%s\n" % (self.command, self.path, code, how and " (%s)" % how))
        sys.stderr.flush()

    # ---- parsing

    def parse(self):
        url = urllib.parse.urlsplit(self.path)
        self.query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        parts = url.path.lstrip("/").split("/", 1)
        self.bucket = urllib.parse.unquote(parts[0])
        self.key = urllib.parse.unquote(parts[1]) if len(parts) > 1 else ""
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""

    def q(self, name, default=None):
        return self.query.get(name, [default])[0]

    def matches(self, glob):
        parts = self.key.split("/")
        return any(fnmatch.fnmatchcase("/".join(parts[i:]), glob) for i in range(len(parts)))

    # ---- answering, with the misbehaviours

    def answer(self, code, body=b"", headers=None, content_type="application/xml"):
        opts = self.server.opts
        how = ""
        if any(self.matches(g) for g in opts.trickle):
            how = "trickle"
        elif any(self.matches(g) for g in opts.endless):
            how = "endless"
        elif any(self.matches(g) for g in opts.extra_bytes):
            how = "extra bytes"
        self.note(code, how)
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if how == "endless":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"1000\r\n" + b"x" * 4096 + b"\r\n"
            while True:
                self.wfile.write(chunk)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if how == "trickle":
            for i in range(len(body)):
                time.sleep(0.5)
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
            return
        self.wfile.write(body)
        self.wfile.flush()
        if how == "extra bytes":  # a moment later: the client has taken the answer as whole by then
            time.sleep(0.1)
            self.wfile.write(b"EXTRA BYTES PAST THE BODY\r\n")
            self.wfile.flush()

    def error(self, code, s3_code, message):
        self.answer(code, error_xml(s3_code, message, self.path))

    def forced_failure(self):
        for rule in self.server.opts.fail:
            glob, _, code = rule.rpartition(":")
            if self.matches(glob):
                self.error(int(code), ERROR_CODES.get(int(code), "InternalError"), "told to fail (--fail %s)" % rule)
                return True
        return False

    def handle_one(self):
        try:
            self.parse()
            if self.forced_failure():
                return
            store = self.server.store
            if self.key == "":
                return self.on_bucket(store)
            if not store.has_bucket(self.bucket):
                return self.error(404, "NoSuchBucket", "The specified bucket does not exist")
            if not valid_key(self.key):
                return self.error(400, "InvalidArgument", "this server keeps keys of plain path parts only")
            return self.on_object(store)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client left (as it should from an endless body)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

    # ---- buckets

    def on_bucket(self, store):
        if self.command == "PUT":
            if store.has_bucket(self.bucket):
                return self.error(409, "BucketAlreadyOwnedByYou", "Your previous request to create the bucket succeeded")
            os.makedirs(store.bucket_dir(self.bucket))
            return self.answer(200)
        if self.command != "GET":
            return self.error(405, "MethodNotAllowed", "not on a bucket here")
        if not store.has_bucket(self.bucket):
            return self.error(404, "NoSuchBucket", "The specified bucket does not exist")
        if self.server.opts.html_listing:
            return self.answer(200, HTML, content_type="text/html")
        self.answer(200, self.listing(store).encode())

    def listing(self, store):
        prefix = self.q("prefix", "")
        max_keys = min(int(self.q("max-keys", "1000")), self.server.opts.page_size)
        token = self.q("continuation-token")
        keys = store.keys(self.bucket, prefix)
        if token and token != REPEATED_TOKEN:
            after = base64.urlsafe_b64decode(token.encode()).decode()
            keys = [k for k in keys if k.encode() > after.encode()]
        page, truncated = keys[:max_keys], 0 < max_keys < len(keys)  # max-keys=0: a probe, nothing to page
        next_token = base64.urlsafe_b64encode(page[-1].encode()).decode() if truncated and page else ""
        if self.server.opts.repeat_token:
            truncated, next_token = True, REPEATED_TOKEN
        xml = [XML_HEAD, "<ListBucketResult%s><Name>%s</Name><Prefix>%s</Prefix>" % (NS, escape(self.bucket),
                                                                                      escape(prefix))]
        xml.append("<KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys>" % (len(page), max_keys))
        xml.append("<IsTruncated>%s</IsTruncated>" % ("true" if truncated else "false"))
        if token:
            xml.append("<ContinuationToken>%s</ContinuationToken>" % escape(token))
        if truncated:
            xml.append("<NextContinuationToken>%s</NextContinuationToken>" % escape(next_token))
        for key in page:
            size = os.path.getsize(store.path(self.bucket, key))
            xml.append("<Contents><Key>%s</Key><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>" %
                       (escape(key), size))
        xml.append("</ListBucketResult>")
        return "".join(xml)

    # ---- objects and multipart uploads

    def on_object(self, store):
        path = store.path(self.bucket, self.key)
        upload = self.q("uploadId")
        if self.command == "POST" and "uploads" in self.query:
            upload = uuid.uuid4().hex
            os.makedirs(os.path.join(store.uploads, upload))
            xml = "%s<InitiateMultipartUploadResult%s><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId>" \
                  "</InitiateMultipartUploadResult>" % (XML_HEAD, NS, escape(self.bucket), escape(self.key), upload)
            return self.answer(200, xml.encode())
        if upload is not None:
            return self.on_upload(store, path, upload)
        if self.command == "PUT":
            store.write(path, self.body)
            return self.answer(200, headers={"ETag": '"%s"' % hashlib.md5(self.body).hexdigest()})
        if self.command == "DELETE":
            if os.path.isfile(path):
                os.remove(path)
            return self.answer(204)
        if self.command in ("GET", "HEAD"):
            if not os.path.isfile(path):
                return self.error(404, "NoSuchKey", "The specified key does not exist.")
            with open(path, "rb") as f:
                data = f.read()
            return self.answer(200, data if self.command == "GET" else b"",
                               headers={"ETag": '"%s"' % hashlib.md5(data).hexdigest()},
                               content_type="application/octet-stream")
        return self.error(405, "MethodNotAllowed", "not on an object here")

    def on_upload(self, store, path, upload):
        parts = os.path.join(store.uploads, os.path.basename(upload))
        if not os.path.isdir(parts):
            return self.error(404, "NoSuchUpload", "The specified upload does not exist")
        if self.command == "PUT":
            number = int(self.q("partNumber", "0"))
            store.write(os.path.join(parts, "%05d" % number), self.body)
            return self.answer(200, headers={"ETag": '"%s"' % hashlib.md5(self.body).hexdigest()})
        names = sorted(os.listdir(parts))
        if self.command == "POST":
            data = b"".join(open(os.path.join(parts, n), "rb").read() for n in names)
            store.write(path, data)
            for n in names:
                os.remove(os.path.join(parts, n))
            os.rmdir(parts)
            xml = "%s<CompleteMultipartUploadResult%s><Bucket>%s</Bucket><Key>%s</Key><ETag>\"%s-%d\"</ETag>" \
                  "</CompleteMultipartUploadResult>" % (XML_HEAD, NS, escape(self.bucket), escape(self.key),
                                                        hashlib.md5(data).hexdigest(), len(names))
            return self.answer(200, xml.encode())
        if self.command == "DELETE":
            for n in names:
                os.remove(os.path.join(parts, n))
            os.rmdir(parts)
            return self.answer(204)
        return self.error(405, "MethodNotAllowed", "not on an upload here")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True  # a trickling or endless answer never holds up the exit
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", nargs="?", help="the directory served (buckets are its subdirectories)")
    parser.add_argument("--root", help="the same as DIR")
    parser.add_argument("--port-file", required=True, help="where the port goes once the server listens")
    parser.add_argument("--page-size", type=int, default=1000, help="the most keys a listing page holds")
    parser.add_argument("--repeat-token", action="store_true")
    parser.add_argument("--html-listing", action="store_true")
    parser.add_argument("--trickle", action="append", default=[], metavar="GLOB")
    parser.add_argument("--endless", action="append", default=[], metavar="GLOB")
    parser.add_argument("--extra-bytes", action="append", default=[], metavar="GLOB")
    parser.add_argument("--fail", action="append", default=[], metavar="GLOB:CODE")
    opts = parser.parse_args()
    opts.root = opts.root or opts.dir
    if not opts.root:
        parser.error("name the directory to serve (DIR or --root DIR)")
    for rule in opts.fail:
        glob, _, code = rule.rpartition(":")
        if not code.isdigit() or not 100 <= int(code) <= 599:
            parser.error("--fail %s: not GLOB:CODE with an HTTP code" % rule)
    server = Server(("127.0.0.1", 0), Handler)
    server.opts, server.store = opts, Store(opts.root)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    tmp = opts.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, opts.port_file)  # whole or absent for a script polling for it
    sys.stderr.write("hostile_s3: serving %s on 127.0.0.1:%d\n" % (server.store.root, server.server_address[1]))
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    sys.stderr.write("hostile_s3: stopped\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
