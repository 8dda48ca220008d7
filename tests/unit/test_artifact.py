# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading artifacts safely: digests, detection, archive members, chart extraction, fetching, descriptor."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.server
import io
import os
import socket
import stat
import tarfile
import threading

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils import artifact
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import ArtifactError, InputError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "artifact")
SHA_ZERO = "0" * 64

_TYPES = {
    "file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
    "chardev": tarfile.CHRTYPE, "blockdev": tarfile.BLKTYPE, "fifo": tarfile.FIFOTYPE,
}


def make_targz(path, members):
    """Write a .tar.gz; members are dicts (name, type, linkname, data, mode, size) or names of small files."""
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            if isinstance(member, str):
                member = {"name": member}
            info = tarfile.TarInfo(member["name"])
            info.type = _TYPES[member.get("type", "file")]
            info.linkname = member.get("linkname", "")
            info.mode = member.get("mode", 0o644)
            data = member.get("data", "kind: X\n")
            data = data.encode("utf-8") if isinstance(data, str) else data
            if info.type == tarfile.REGTYPE:
                info.size = member.get("size", len(data))
                tar.addfile(info, io.BytesIO(data) if "size" not in member else None)
            else:
                tar.addfile(info)
    return str(path)


def _bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def _text(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def sha256_of(data):
    return hashlib.sha256(data).hexdigest()


def _archive_cases():
    with open(os.path.join(FIXTURES, "archives.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


# --- digests --------------------------------------------------------------------------------------

def test_sha256_file(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_bytes(b"kind: ConfigMap\n")
    assert artifact.sha256_file(str(path)) == sha256_of(b"kind: ConfigMap\n")


def test_verify_accepts_matching_digest_in_any_spelling(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x")
    digest = sha256_of(b"x")
    assert artifact.verify(str(path), digest) == digest
    assert artifact.verify(str(path), "sha256:" + digest.upper()) == digest


def test_verify_mismatch_names_file_digests_and_fix(tmp_path):
    path = tmp_path / "shop-1.4.0.yaml"
    path.write_bytes(b"tampered")
    with pytest.raises(ArtifactError) as info:
        artifact.verify(str(path), SHA_ZERO, name="shop-1.4.0.yaml")
    assert str(info.value) == (
        "shop-1.4.0.yaml: sha256 mismatch: expected %s, got %s (the file is not the one that was published; "
        "re-publish the artifact, or fix the sha256 in the artifact descriptor)" % (SHA_ZERO, sha256_of(b"tampered")))


def test_verify_empty_digest_needs_allow_unverified(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x")
    with pytest.raises(ArtifactError, match="no sha256 given"):
        artifact.verify(str(path), "")
    assert artifact.verify(str(path), "", allow_unverified=True) == sha256_of(b"x")


@pytest.mark.parametrize("value", ["abc", "g" * 64, "0" * 63, 12])
def test_invalid_digest_is_an_input_error(value):
    with pytest.raises(InputError):
        artifact.normalize_sha256(value)


# --- detection ------------------------------------------------------------------------------------

@pytest.mark.parametrize("members, expected", [
    (["shop/Chart.yaml", "shop/values.yaml", "shop/templates/deployment.yaml"], "chart"),
    (["shop/templates/deployment.yaml", "shop/Chart.yaml"], "chart"),
    ([{"name": "shop", "type": "dir"}, "shop/Chart.yaml"], "chart"),
    (["./shop/Chart.yaml", "./shop/values.yaml"], "chart"),
    (["Chart.yaml", "templates/deployment.yaml"], "archive"),
    (["charts/shop/sub/Chart.yaml", "app.yaml"], "archive"),
    (["shop/charts/sub/Chart.yaml"], "archive"),
    (["app.yaml", "crd.json"], "archive"),
    ([], "archive"),
])
def test_detect_archives(tmp_path, members, expected):
    assert artifact.detect(make_targz(tmp_path / "a.tgz", members)) == expected


@pytest.mark.parametrize("content", [b"apiVersion: v1\nkind: ConfigMap\n", b'{"kind": "List", "items": []}', b""])
def test_detect_plain_manifest(tmp_path, content):
    path = tmp_path / "m"
    path.write_bytes(content)
    assert artifact.detect(str(path)) == "manifest"


def test_detect_gzip_that_is_not_a_tar(tmp_path):
    path = tmp_path / "app.yaml.gz"
    path.write_bytes(gzip.compress(b"apiVersion: v1\nkind: ConfigMap\n" * 20))
    with pytest.raises(ArtifactError) as info:
        artifact.detect(str(path))
    assert info.value.subject == "app.yaml.gz"
    assert info.value.message.startswith("is not a valid .tar.gz")


def test_detect_truncated_gzip(tmp_path):
    data = _bytes(make_targz(tmp_path / "full.tgz", ["a.yaml"] * 1))
    path = tmp_path / "cut.tgz"
    path.write_bytes(data[:12])
    with pytest.raises(ArtifactError, match="is not a valid .tar.gz"):
        artifact.detect(str(path))


def test_detect_uncompressed_tar_is_refused(tmp_path):
    path = tmp_path / "a.tar"
    with tarfile.open(str(path), "w") as tar:
        info = tarfile.TarInfo("a.yaml")
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(ArtifactError, match="is an uncompressed tar archive"):
        artifact.detect(str(path))


def test_detect_two_charts_is_an_error(tmp_path):
    with pytest.raises(ArtifactError, match=r"holds several charts \(a, b\)"):
        artifact.detect(make_targz(tmp_path / "two.tgz", ["a/Chart.yaml", "b/Chart.yaml"]))


# --- unsafe members -------------------------------------------------------------------------------

def _read(path, _dest):
    return artifact.read_archive_manifests(path)


def _extract(path, dest):
    return artifact.extract_chart(path, dest)


@pytest.mark.parametrize("reader", [artifact.detect, _read, _extract], ids=["detect", "read", "extract"])
@pytest.mark.parametrize("case", _archive_cases(), ids=lambda case: case["id"])
def test_unsafe_members_are_refused(tmp_path, case, reader):
    path = make_targz(tmp_path / "evil.tgz", case["members"])
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(ArtifactError) as info:
        if reader is artifact.detect:
            reader(path)
        else:
            reader(path, str(dest))
    assert info.value.subject == "evil.tgz"
    assert info.value.message == case["error"]
    assert not (tmp_path / "evil.yaml").exists()
    assert not any(name in ("evil.yaml", "values.yaml") for _root, _dirs, files in os.walk(str(dest)) for name in files)


def test_safe_members_yields_checked_members(tmp_path):
    path = make_targz(tmp_path / "ok.tgz", [{"name": "d", "type": "dir"}, "d/a.yaml"])
    with tarfile.open(path, "r|gz") as tar:
        assert [m.name for m in artifact.safe_members(tar, "ok.tgz")] == ["d", "d/a.yaml"]


def test_too_many_members(tmp_path):
    path = make_targz(tmp_path / "many.tgz", ["m%d.yaml" % i for i in range(6)])
    with tarfile.open(path, "r|gz") as tar:
        with pytest.raises(ArtifactError) as info:
            list(artifact.safe_members(tar, "many.tgz", max_members=5))
    assert info.value.message == "has more than 5 members"


def test_default_member_limit(tmp_path):
    path = make_targz(tmp_path / "many.tgz", [{"name": "m%05d" % i, "data": ""}
                                              for i in range(artifact.MAX_MEMBERS + 1)])
    with pytest.raises(ArtifactError, match="has more than 10000 members"):
        artifact.read_archive_manifests(path)


def test_total_size_limit(tmp_path):
    path = make_targz(tmp_path / "big.tgz", [{"name": "a.yaml", "data": "x" * 60},
                                             {"name": "b.yaml", "data": "y" * 60}])
    with pytest.raises(ArtifactError) as info:
        artifact.read_archive_manifests(path, max_total_size=100)
    assert info.value.message == "unpacks to more than 100 bytes (at member b.yaml)"


def test_size_is_checked_before_reading_data(tmp_path):
    # a header claiming 1 TiB with no data behind it: refused from the header alone
    path = make_targz(tmp_path / "bomb.tgz", [{"name": "huge.yaml", "size": 1 << 40}])
    with pytest.raises(ArtifactError, match=r"unpacks to more than 268435456 bytes \(at member huge.yaml\)"):
        artifact.read_archive_manifests(path)


# --- reading manifests ----------------------------------------------------------------------------

def test_read_archive_manifests_in_byte_order_of_name(tmp_path):
    names = ["b.yaml", "a/z.yml", "B.json", "a.yaml", "ä.yaml", "_x.yaml", "README.md", "bin/tool",
             "._a.yaml", "__MACOSX/._b.yaml", "UPPER.YAML"]
    members = [{"name": "a", "type": "dir"}] + [{"name": n, "data": "name: %s\n" % n} for n in names]
    members[names.index("._a.yaml") + 1]["data"] = b"\x00\x05\x16\x07\xff"
    result = artifact.read_archive_manifests(make_targz(tmp_path / "m.tar.gz", members))
    assert [name for name, _text in result] == [
        "B.json", "UPPER.YAML", "_x.yaml", "a.yaml", "a/z.yml", "b.yaml", "ä.yaml"]
    assert dict(result)["a/z.yml"] == "name: a/z.yml\n"


def test_read_archive_manifests_non_utf8_names_the_member(tmp_path):
    path = make_targz(tmp_path / "m.tgz", [{"name": "ok.yaml"}, {"name": "conf/latin1.yaml", "data": b"a: \xe8\n"}])
    with pytest.raises(ArtifactError) as info:
        artifact.read_archive_manifests(path)
    assert str(info.value) == ("m.tgz: member conf/latin1.yaml is not UTF-8 text (byte 3) "
                               "(save the manifest as UTF-8, or remove the file from the archive)")


def test_read_manifests_plain_and_archive(tmp_path):
    plain = tmp_path / "downloaded"
    plain.write_bytes("\ufeffkind: A\n".encode("utf-8"))
    assert artifact.read_manifests(str(plain), name="shop-1.4.0.yaml") == [("shop-1.4.0.yaml", "kind: A\n")]
    archive = make_targz(tmp_path / "m.tgz", [{"name": "b.yaml", "data": "kind: B\n"},
                                              {"name": "a.yaml", "data": "kind: A\n"}])
    assert artifact.read_manifests(archive, name="shop.tgz") == [
        ("shop.tgz:a.yaml", "kind: A\n"), ("shop.tgz:b.yaml", "kind: B\n")]
    chart = make_targz(tmp_path / "c.tgz", ["shop/Chart.yaml"])
    with pytest.raises(ArtifactError, match="is a Helm chart, not manifests"):
        artifact.read_manifests(chart)


# --- chart extraction -----------------------------------------------------------------------------

def test_extract_chart(tmp_path):
    path = make_targz(tmp_path / "shop-1.4.0.tgz", [
        {"name": "shop/Chart.yaml", "data": "apiVersion: v2\nname: shop\nversion: 1.4.0\n"},
        {"name": "shop/templates/deploy.yaml", "data": "kind: Deployment\n", "mode": 0o4777},
        {"name": "shop/charts/db/Chart.yaml", "data": "name: db\n"},
    ])
    dest = tmp_path / "out"
    dest.mkdir()
    chart_dir = artifact.extract_chart(path, str(dest))
    assert chart_dir == os.path.join(os.path.realpath(str(dest)), "shop")
    assert _text(os.path.join(chart_dir, "templates", "deploy.yaml")) == "kind: Deployment\n"
    assert _text(os.path.join(chart_dir, "charts", "db", "Chart.yaml")) == "name: db\n"
    mode = stat.S_IMODE(os.stat(os.path.join(chart_dir, "templates", "deploy.yaml")).st_mode)
    assert mode & 0o7022 == 0  # no setuid, no group/world write from the archive


@pytest.mark.parametrize("members, message", [
    (["shop/Chart.yaml", "other/evil.yaml"], "has members outside the chart directory shop/: other"),
    (["shop/Chart.yaml", "evil.yaml"], "member evil.yaml is not inside a chart directory"),
    (["app.yaml"], "member app.yaml is not inside a chart directory"),
    (["shop/templates/a.yaml"], "is not a chart package: expected exactly one <name>/Chart.yaml, found none"),
])
def test_extract_chart_refuses_non_charts(tmp_path, members, message):
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(ArtifactError) as info:
        artifact.extract_chart(make_targz(tmp_path / "c.tgz", members), str(dest))
    assert info.value.message == message


# --- fetching -------------------------------------------------------------------------------------

class _Server:
    """A tiny HTTP server on 127.0.0.1 serving ``files`` (path -> bytes) and recording requests."""

    def __init__(self, files, auth=None, redirects=None):
        self.files = files
        self.auth = auth
        self.redirects = redirects or {}
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server API)
                server.requests.append((self.path, self.headers.get("Authorization")))
                if self.path in server.redirects:
                    self.send_response(302)
                    self.send_header("Location", server.redirects[self.path])
                    self.end_headers()
                    return
                if server.auth and self.headers.get("Authorization") != server.auth:
                    self.send_response(401)
                    self.end_headers()
                    return
                body = server.files.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def url(self, path, userinfo=""):
        return "http://%s127.0.0.1:%d%s" % (userinfo, self.port, path)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


BODY = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop}\n"
BODY_SHA = hashlib.sha256(BODY).hexdigest()


def test_fetch_local_path_and_file_url(tmp_path):
    source = tmp_path / "shop 1.4.0.yaml"
    source.write_bytes(BODY)
    cache = tmp_path / "cache"
    path = artifact.fetch(str(source), str(cache), BODY_SHA)
    assert path == os.path.join(str(cache), BODY_SHA)
    assert _bytes(path) == BODY
    os.unlink(path)
    url = "file://" + str(source).replace(" ", "%20")
    assert artifact.fetch(url, str(cache), "sha256:" + BODY_SHA) == os.path.join(str(cache), BODY_SHA)
    assert os.listdir(str(cache)) == [BODY_SHA]


def test_fetch_missing_local_file(tmp_path):
    with pytest.raises(ArtifactError) as info:
        artifact.fetch(str(tmp_path / "nope.yaml"), str(tmp_path / "c"), BODY_SHA)
    assert info.value.message == "cannot be read: No such file or directory"


def test_fetch_file_url_with_remote_host_is_refused(tmp_path):
    with pytest.raises(ArtifactError, match="must name a local file"):
        artifact.fetch("file://server/share/a.yaml", str(tmp_path), BODY_SHA)


def test_fetch_mismatch_leaves_nothing_behind(tmp_path):
    source = tmp_path / "a.yaml"
    source.write_bytes(BODY)
    cache = tmp_path / "cache"
    with pytest.raises(ArtifactError) as info:
        artifact.fetch(str(source), str(cache), SHA_ZERO)
    assert info.value.message == "sha256 mismatch: expected %s, got %s" % (SHA_ZERO, BODY_SHA)
    assert "re-publish" in info.value.hint
    assert os.listdir(str(cache)) == []


def test_fetch_requires_digest_unless_allowed(tmp_path):
    source = tmp_path / "a.yaml"
    source.write_bytes(BODY)
    with pytest.raises(ArtifactError, match="no sha256 given"):
        artifact.fetch(str(source), str(tmp_path / "c"), "")
    assert artifact.fetch(str(source), str(tmp_path / "c"), None, allow_unverified=True) == \
        os.path.join(str(tmp_path / "c"), BODY_SHA)


def test_fetch_http_and_cache_reuse(tmp_path):
    cache = tmp_path / "cache"
    with _Server({"/repo/shop-1.4.0.yaml": BODY}) as server:
        url = server.url("/repo/shop-1.4.0.yaml")
        first = artifact.fetch(url, str(cache), BODY_SHA, timeout=5)
        second = artifact.fetch(url, str(cache), BODY_SHA, timeout=5)
        assert first == second == os.path.join(str(cache), BODY_SHA)
        assert [path for path, _headers in server.requests] == ["/repo/shop-1.4.0.yaml"]
        # a damaged cache entry is not trusted: downloaded again
        with open(first, "wb") as handle:
            handle.write(b"garbage")
        assert artifact.fetch(url, str(cache), BODY_SHA, timeout=5) == first
        assert len(server.requests) == 2
    assert _bytes(first) == BODY
    assert sorted(os.listdir(str(cache))) == [BODY_SHA]


def test_fetch_http_mismatch(tmp_path):
    with _Server({"/a.yaml": b"other"}) as server:
        with pytest.raises(ArtifactError, match="sha256 mismatch: expected %s" % BODY_SHA):
            artifact.fetch(server.url("/a.yaml"), str(tmp_path), BODY_SHA, timeout=5)
    assert os.listdir(str(tmp_path)) == []


def test_fetch_http_size_limit(tmp_path):
    with _Server({"/a.yaml": BODY}) as server:
        with pytest.raises(ArtifactError, match="is larger than 10 bytes"):
            artifact.fetch(server.url("/a.yaml"), str(tmp_path), BODY_SHA, timeout=5, max_size=10)
    assert os.listdir(str(tmp_path)) == []


def test_fetch_sends_url_credentials_as_basic_auth(tmp_path):
    auth = "Basic " + base64.b64encode(b"deployer:s3cr%t").decode("ascii")
    with _Server({"/a.yaml": BODY}, auth=auth) as server:
        path = artifact.fetch(server.url("/a.yaml", "deployer:s3cr%25t@"), str(tmp_path), BODY_SHA, timeout=5)
        assert _bytes(path) == BODY
        assert server.requests == [("/a.yaml", auth)]


def test_fetch_credentials_never_in_errors(tmp_path):
    with _Server({}, auth="Basic x") as server:
        for path, expected in (("/missing.yaml", "download failed: HTTP 401 Unauthorized"),):
            with pytest.raises(ArtifactError) as info:
                artifact.fetch(server.url(path, "deployer:hunter2@"), str(tmp_path), BODY_SHA, timeout=5)
            text = str(info.value)
            assert info.value.message == expected
            assert info.value.subject == server.url(path)
            assert "hunter2" not in text and "deployer" not in text
    # connection refused on a closed port, and a signed query string
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    url = "http://deployer:hunter2@127.0.0.1:%d/a.yaml?X-Amz-Signature=topsecret&v=1" % port
    with pytest.raises(ArtifactError) as info:
        artifact.fetch(url, str(tmp_path), BODY_SHA, timeout=5)
    text = str(info.value)
    assert info.value.subject == "http://127.0.0.1:%d/a.yaml?X-Amz-Signature=***&v=***" % port
    assert info.value.message.startswith("download failed:")
    assert "hunter2" not in text and "deployer" not in text and "topsecret" not in text


def test_fetch_does_not_forward_credentials_on_redirect(tmp_path):
    with _Server({"/a.yaml": BODY}) as other:
        with _Server({}, redirects={"/a.yaml": other.url("/a.yaml")}) as server:
            path = artifact.fetch(server.url("/a.yaml", "deployer:hunter2@"), str(tmp_path), BODY_SHA, timeout=5)
        assert _bytes(path) == BODY
        assert server.requests[0][1] is not None
        assert other.requests == [("/a.yaml", None)]


def test_fetch_http_404(tmp_path):
    with _Server({}) as server:
        with pytest.raises(ArtifactError) as info:
            artifact.fetch(server.url("/nope.yaml"), str(tmp_path), BODY_SHA, timeout=5)
    assert str(info.value) == ("%s: download failed: HTTP 404 Not Found (check the URL and that the artifact was "
                               "published)" % server.url("/nope.yaml"))


@pytest.mark.parametrize("source, message", [
    ("ftp://host/a.yaml", "unsupported source scheme 'ftp'"),
    ("s3://bucket/a.yaml", "unsupported source scheme 's3'"),
    ("http://127.0.0.1:99999/a.yaml", "is not a valid URL: Port out of range 0-65535"),
])
def test_fetch_bad_sources(tmp_path, source, message):
    with pytest.raises(ArtifactError) as info:
        artifact.fetch(source, str(tmp_path), BODY_SHA)
    assert info.value.message == message


def test_fetch_bad_ca_file(tmp_path):
    with pytest.raises(ArtifactError, match="cannot load the CA file"):
        artifact.fetch("https://127.0.0.1:1/a.yaml", str(tmp_path), BODY_SHA, ca_file=str(tmp_path / "none.pem"))


@pytest.mark.parametrize("source, shown, name", [
    ("https://u:p@nexus.example.com/repo/shop-1.4.0.tgz", "https://nexus.example.com/repo/shop-1.4.0.tgz",
     "shop-1.4.0.tgz"),
    ("https://nexus.example.com/a.yaml?token=abc", "https://nexus.example.com/a.yaml?token=***", "a.yaml"),
    ("/srv/artifacts/shop.yaml", "/srv/artifacts/shop.yaml", "shop.yaml"),
    ("file:///srv/my%20app.yaml", "file:///srv/my%20app.yaml", "my app.yaml"),
])
def test_redact_url_and_display_name(source, shown, name):
    assert artifact.redact_url(source) == shown
    assert artifact.display_name(source) == name


# --- descriptor -----------------------------------------------------------------------------------

GOOD = {"type": "kubernetes", "name": "shop", "version": "1.4.0",
        "source": "https://nexus.example.com/repository/manifests/shop-1.4.0.yaml", "sha256": "AB" * 32}


def test_descriptor_from_dict():
    descriptor = artifact.Descriptor.from_dict(dict(GOOD, extra="ignored"))
    assert descriptor == artifact.Descriptor("kubernetes", "shop", "1.4.0", GOOD["source"], "ab" * 32)
    assert descriptor.display_name == "shop-1.4.0.yaml"


@pytest.mark.parametrize("change, message", [
    ({"type": "helm"}, "artifact.type: is 'helm', this plugin deploys type kubernetes"),
    ({"name": None}, "artifact.name: is missing"),
    ({"name": "-shop"}, "artifact.name: '-shop' is not a valid name"),
    ({"name": "x" * 64}, "artifact.name: '%s' is not a valid name" % ("x" * 64)),
    ({"version": 1.4}, 'artifact.version: must be a string, got float 1.4 (quote it in YAML, e.g. version: "1.4")'),
    ({"version": ""}, "artifact.version: is missing"),
    ({"source": ["a"]}, "artifact.source: must be a string, got list"),
    ({"sha256": "8c1f"}, "artifact.sha256: is not a sha256 digest (64 hex digits): '8c1f'"),
    ({"sha256": None}, "artifact.sha256: is missing"),
])
def test_descriptor_errors_name_the_field(change, message):
    with pytest.raises(InputError) as info:
        artifact.Descriptor.from_dict(dict(GOOD, **change))
    assert str(info.value).startswith(message)


def test_descriptor_defaults_and_unverified():
    data = {"name": "shop", "version": "1", "source": "a.yaml"}
    assert artifact.Descriptor.from_dict(data, allow_unverified=True).type == "kubernetes"
    with pytest.raises(InputError, match="must be a mapping"):
        artifact.Descriptor.from_dict(["shop"])
