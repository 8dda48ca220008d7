# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The artifact: fetch it, verify its sha256, tell what it is and read it without trusting it (SPEC §1).

An artifact is a plain manifest (YAML or JSON), a ``.tar.gz`` of manifests, or a packaged Helm chart
(a ``.tgz`` whose members are ``<name>/Chart.yaml``, ``<name>/templates/...``). Archives are read as a
stream and every member is checked before anything is read or written: no absolute paths, no ``..``,
no links, devices or fifos, and bounded member count and uncompressed size (a gzip bomb stops at the
limit instead of filling the disk).

Downloads go to a file named after the sha256 in a cache directory, written atomically, verified before
use, and reused by later deploys of the same artifact. URLs may carry ``user:password@``: they are sent
as HTTP basic authentication (never to a host a redirect leads to) and never appear in messages.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import re
import shutil
import ssl
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass

from ansible_collections.manent.kubernetes.plugins.module_utils.errors import ArtifactError, InputError

MANIFEST = "manifest"
ARCHIVE = "archive"
CHART = "chart"

MAX_TOTAL_SIZE = 256 * 1024 * 1024
MAX_MEMBERS = 10000
MAX_DOWNLOAD_SIZE = 256 * 1024 * 1024
MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")
ARTIFACT_TYPE = "kubernetes"

_CHUNK = 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_REPUBLISH = "re-publish the artifact, or fix the sha256 in the artifact descriptor"


# --- digests ------------------------------------------------------------------------------------

def sha256_file(path):
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def normalize_sha256(value, field="sha256"):
    """Lower-case hex digest; accepts a ``sha256:`` prefix. Empty/None gives ''."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError("must be a string of 64 hex digits, got %s" % type(value).__name__, subject=field,
                         hint="quote the digest in the descriptor")
    text = value.strip().lower()
    if text.startswith("sha256:"):
        text = text[len("sha256:"):]
    if text and not _SHA256.fullmatch(text):
        raise InputError("is not a sha256 digest (64 hex digits): %r" % value, subject=field,
                         hint="use the output of sha256sum for the artifact file")
    return text


def verify(path, expected_sha256, allow_unverified=False, name=None):
    """Check the file against its expected sha256; return the actual digest.

    An empty ``expected_sha256`` is an error unless ``allow_unverified`` is true.
    """
    label = name or path
    expected = normalize_sha256(expected_sha256)
    if not expected:
        if not allow_unverified:
            raise ArtifactError("no sha256 given: the artifact cannot be verified", subject=label,
                                hint="add sha256 to the artifact descriptor (sha256sum of the published file)")
        return sha256_file(path)
    actual = sha256_file(path)
    if actual != expected:
        raise ArtifactError("sha256 mismatch: expected %s, got %s" % (expected, actual), subject=label,
                            hint="the file is not the one that was published; " + _REPUBLISH)
    return actual


# --- kind of artifact ---------------------------------------------------------------------------

def detect(path, max_total_size=MAX_TOTAL_SIZE, max_members=MAX_MEMBERS):
    """'chart', 'archive' or 'manifest'.

    A gzip tar with a member ``<name>/Chart.yaml`` (exactly one level deep) is a chart; any other gzip tar is
    a manifest archive; a gzip file that is not a tar is an error; anything else is a plain manifest. The
    archive's members are checked (see :func:`safe_members`) while detecting.
    """
    with open(path, "rb") as handle:
        head = handle.read(512)
    label = os.path.basename(path)
    if not head.startswith(_GZIP_MAGIC):
        if len(head) >= 262 and head[257:262] == b"ustar":
            raise ArtifactError("is an uncompressed tar archive", subject=label,
                                hint="publish a .tar.gz (tar czf) of the manifests")
        if head.startswith(b"PK\x03\x04"):
            raise ArtifactError("is a zip archive, which is not supported", subject=label,
                                hint="publish a .tar.gz of the manifests or a helm package .tgz")
        return MANIFEST
    charts = set()
    with _open_tar(path) as tar:
        for _member, name in _iterate(tar, label, max_total_size, max_members):
            parts = name.split("/")
            if len(parts) == 2 and parts[1] == "Chart.yaml":
                charts.add(parts[0])
    if len(charts) > 1:
        raise ArtifactError("holds several charts (%s)" % ", ".join(sorted(charts)), subject=label,
                            hint="publish one chart per artifact (helm package <dir>)")
    return CHART if charts else ARCHIVE


# --- archive members ----------------------------------------------------------------------------

def safe_members(tar, source, max_total_size=MAX_TOTAL_SIZE, max_members=MAX_MEMBERS):
    """Yield the members of an open tar after checking each one; raise ArtifactError on the first bad one.

    Rejected: absolute paths, ``..`` components, symlinks, hard links, devices, fifos and other special
    members, names that appear twice, more than ``max_members`` members, more than ``max_total_size``
    uncompressed bytes. Works on stream-mode tars: the size check happens before the data is read.
    """
    for member, _data in _iterate(tar, source, max_total_size, max_members):
        yield member


def _iterate(tar, source, max_total_size, max_members):
    """Like :func:`safe_members`, yielding (member, normalized name)."""
    count = 0
    total = 0
    seen = set()
    while True:
        try:
            member = tar.next()
        except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
            raise ArtifactError("is not a valid .tar.gz: %s" % _reason(err), subject=source,
                                hint="rebuild the archive with tar czf (or helm package) and " + _REPUBLISH) from None
        if member is None:
            return
        count += 1
        if count > max_members:
            raise ArtifactError("has more than %d members" % max_members, subject=source,
                                hint="an artifact this large is not a set of manifests; check what was packaged")
        name = _check_member(member, source)
        if name in seen:
            raise ArtifactError("member %s appears twice" % name, subject=source,
                                hint="rebuild the archive without duplicate entries")
        seen.add(name)
        if member.isreg():
            total += member.size
            if total > max_total_size:
                raise ArtifactError("unpacks to more than %d bytes (at member %s)" % (max_total_size, name),
                                    subject=source, hint="the archive is too large or a compression bomb; "
                                                         "check what was packaged")
        yield member, name


def _check_member(member, source):
    raw = member.name
    if member.issym():
        raise ArtifactError("member %s is a symbolic link (to %s), which is not allowed" % (raw, member.linkname),
                            subject=source, hint="package the file itself instead of a link")
    if member.islnk():
        raise ArtifactError("member %s is a hard link (to %s), which is not allowed" % (raw, member.linkname),
                            subject=source, hint="package the file itself instead of a link")
    if not (member.isreg() or member.isdir()):
        raise ArtifactError("member %s is a device, fifo or other special file, which is not allowed" % raw,
                            subject=source, hint="package only regular files and directories")
    if not raw or "\x00" in raw:
        raise ArtifactError("has a member with an empty or invalid name", subject=source,
                            hint="rebuild the archive")
    if raw.startswith("/") or re.match(r"[A-Za-z]:[\\/]", raw) or raw.startswith("\\"):
        raise ArtifactError("member %s has an absolute path, which is not allowed" % raw, subject=source,
                            hint="build the archive with relative paths (tar czf out.tar.gz -C dir .)")
    parts = [part for part in raw.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArtifactError("member %s contains '..', which is not allowed" % raw, subject=source,
                            hint="build the archive with paths inside one directory")
    return "/".join(parts)


class _GzipTar:
    """A streamed tar read through gzip.GzipFile: Python 3.11's own "r|gz" reader mis-reads gzip headers that
    carry an extra field, which is exactly what ``helm package`` writes."""

    def __init__(self, path):
        self._raw = open(path, "rb")  # pylint: disable=consider-using-with
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="rb")
        try:
            self.tar = tarfile.open(fileobj=self._gz, mode="r|", encoding="utf-8")  # pylint: disable=consider-using-with
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self.tar

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for handle in (getattr(self, "tar", None), self._gz, self._raw):
            if handle is not None:
                try:
                    handle.close()
                except (OSError, EOFError, tarfile.TarError, zlib.error):
                    pass


def _open_tar(path):
    label = os.path.basename(path)
    try:
        return _GzipTar(path)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        raise ArtifactError("is not a valid .tar.gz: %s" % _reason(err), subject=label,
                            hint="rebuild the archive with tar czf (or helm package) and " + _REPUBLISH) from None


def _reason(err):
    return str(err) or type(err).__name__


def _is_manifest(name):
    base = name.rsplit("/", 1)[-1]
    if base.startswith("._") or name.split("/", 1)[0] == "__MACOSX":
        return False  # macOS resource forks that tar on macOS adds; never manifests
    return base.lower().endswith(MANIFEST_EXTENSIONS)


def _read_member(tar, member, name, source):
    try:
        handle = tar.extractfile(member)
        data = handle.read() if handle is not None else b""
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        raise ArtifactError("member %s cannot be read: %s" % (name, _reason(err)), subject=source,
                            hint=_REPUBLISH) from None
    if len(data) != member.size:
        raise ArtifactError("member %s is truncated" % name, subject=source, hint=_REPUBLISH)
    return data


def _decode(data, name, source):
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ArtifactError("member %s is not UTF-8 text (byte %d)" % (name, err.start), subject=source,
                            hint="save the manifest as UTF-8, or remove the file from the archive") from None


def read_archive_manifests(path, max_total_size=MAX_TOTAL_SIZE, max_members=MAX_MEMBERS):
    """``[(member_name, text), ...]`` for the ``.yaml``, ``.yml`` and ``.json`` members, in byte order of name.

    Other files (README, macOS ``._*`` resource forks) are ignored; the archive's members are all checked.
    """
    label = os.path.basename(path)
    found = []
    with _open_tar(path) as tar:
        for member, name in _iterate(tar, label, max_total_size, max_members):
            if member.isreg() and _is_manifest(name):
                found.append((name, _read_member(tar, member, name, label)))
    found.sort(key=lambda item: item[0].encode("utf-8", "surrogateescape"))
    return [(name, _decode(data, name, label)) for name, data in found]


def read_manifests(path, name=None):
    """The manifest texts of a plain manifest or a manifest archive: ``[(filename, text), ...]``.

    ``name`` is how the plain file is called in messages (default: its base name). Charts are refused.
    """
    label = name or os.path.basename(path)
    kind = detect(path)
    if kind == CHART:
        raise ArtifactError("is a Helm chart, not manifests", subject=label, hint="render it with helm")
    if kind == ARCHIVE:
        return [("%s:%s" % (label, member), text) for member, text in read_archive_manifests(path)]
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return [(label, data.decode("utf-8-sig"))]
    except UnicodeDecodeError as err:
        raise ArtifactError("is not UTF-8 text (byte %d)" % err.start, subject=label,
                            hint="save the manifest as UTF-8") from None


def extract_chart(path, dest_dir, max_total_size=MAX_TOTAL_SIZE, max_members=MAX_MEMBERS):
    """Unpack a chart package into ``dest_dir`` (checking every member) and return the chart directory.

    ``dest_dir`` should be empty. Files are written by this function (not by ``tarfile``), with mode
    0644/0755 and no ownership, only below ``dest_dir``. Every member must be inside the chart's top
    directory.
    """
    label = os.path.basename(path)
    root = os.path.realpath(dest_dir)
    tops = set()
    charts = set()
    with _open_tar(path) as tar:
        for member, name in _iterate(tar, label, max_total_size, max_members):
            if not name:
                continue
            parts = name.split("/")
            tops.add(parts[0])
            if len(parts) == 2 and parts[1] == "Chart.yaml" and member.isreg():
                charts.add(parts[0])
            target = os.path.realpath(os.path.join(root, *parts))
            if os.path.commonpath([root, target]) != root:
                raise ArtifactError("member %s would be written outside the destination" % name, subject=label,
                                    hint=_REPUBLISH)
            if member.isreg() and len(parts) == 1:
                raise ArtifactError("member %s is not inside a chart directory" % name, subject=label,
                                    hint="package the chart with helm package")
            try:
                if member.isdir():
                    os.makedirs(target, mode=0o755, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                    _write_member(tar, member, target)
            except (tarfile.TarError, EOFError, zlib.error) as err:
                raise ArtifactError("member %s cannot be read: %s" % (name, _reason(err)), subject=label,
                                    hint=_REPUBLISH) from None
            except OSError as err:
                raise ArtifactError("member %s cannot be unpacked into %s: %s" % (name, dest_dir, _reason(err)),
                                    subject=label, hint="unpack into an empty directory") from None
    if len(charts) != 1:
        found = ", ".join(sorted(charts)) or "none"
        raise ArtifactError("is not a chart package: expected exactly one <name>/Chart.yaml, found %s" % found,
                            subject=label, hint="package the chart with helm package")
    chart = charts.pop()
    others = sorted(tops - {chart})
    if others:
        raise ArtifactError("has members outside the chart directory %s/: %s" % (chart, ", ".join(others)),
                            subject=label, hint="package the chart with helm package")
    return os.path.join(root, chart)


def _write_member(tar, member, target):
    source = tar.extractfile(member)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(target, flags, 0o644)
    with os.fdopen(descriptor, "wb") as out:
        if source is not None:
            shutil.copyfileobj(source, out, _CHUNK)


# --- fetching -----------------------------------------------------------------------------------

def redact_url(source):
    """The source without ``user:password@`` and with query values hidden (signed URLs carry secrets)."""
    if not isinstance(source, str) or "://" not in source:
        return source
    try:
        parts = urllib.parse.urlsplit(source)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = parts.query
    if query:
        query = "&".join("%s=***" % item.split("=", 1)[0] if "=" in item else item for item in query.split("&"))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def display_name(source):
    """Base name of the source's path, for messages and manifest sources (``shop-1.4.0.yaml``)."""
    if isinstance(source, str) and "://" in source:
        try:
            path = urllib.parse.unquote(urllib.parse.urlsplit(source).path)
        except ValueError:
            return "artifact"
    else:
        path = source or ""
    return os.path.basename(path.rstrip("/")) or "artifact"


def fetch(source, dest_dir, expected_sha256, timeout=60, ca_file=None, allow_unverified=False,
          max_size=MAX_DOWNLOAD_SIZE):
    """Copy or download the artifact into ``dest_dir/<sha256>``, verify it and return that path.

    ``source`` is a local path or a ``file://``, ``http://`` or ``https://`` URL. HTTPS verifies the server
    certificate against ``ca_file`` (else the system CAs). When ``dest_dir`` already holds a file named after
    the expected sha256 whose content matches, it is returned without downloading again.
    """
    expected = normalize_sha256(expected_sha256)
    shown = redact_url(source)
    if not expected and not allow_unverified:
        raise ArtifactError("no sha256 given: the artifact cannot be verified", subject=shown,
                            hint="add sha256 to the artifact descriptor (sha256sum of the published file)")
    os.makedirs(dest_dir, exist_ok=True)
    if expected:
        cached = os.path.join(dest_dir, expected)
        if os.path.isfile(cached):
            if sha256_file(cached) == expected:
                return cached
            os.unlink(cached)  # a damaged cache entry: fetch again
    handle = _open_source(source, shown, timeout, ca_file)
    descriptor, partial = tempfile.mkstemp(prefix=".partial-", dir=dest_dir)
    try:
        with handle, os.fdopen(descriptor, "wb") as out:
            actual = _copy(handle, out, shown, max_size)
        if expected and actual != expected:
            raise ArtifactError("sha256 mismatch: expected %s, got %s" % (expected, actual), subject=shown,
                                hint="the downloaded file is not the one that was published; " + _REPUBLISH)
        final = os.path.join(dest_dir, actual)
        os.replace(partial, final)
        partial = None
        return final
    finally:
        if partial is not None and os.path.exists(partial):
            os.unlink(partial)


def _copy(handle, out, shown, max_size):
    """Copy the stream to ``out`` while hashing it; return the hex sha256."""
    digest = hashlib.sha256()
    size = 0
    while True:
        try:
            chunk = handle.read(_CHUNK)
        except (OSError, ValueError) as err:
            raise ArtifactError("download interrupted: %s" % _reason(err), subject=shown,
                                hint="check the network and the repository, then retry") from None
        if not chunk:
            return digest.hexdigest()
        size += len(chunk)
        if size > max_size:
            raise ArtifactError("is larger than %d bytes" % max_size, subject=shown,
                                hint="check that the source points to the artifact")
        digest.update(chunk)
        out.write(chunk)


def _open_source(source, shown, timeout, ca_file):
    if not isinstance(source, str) or not source:
        raise ArtifactError("the artifact source is empty", subject="artifact.source",
                            hint="set source to a URL or a path")
    scheme = source.split("://", 1)[0].lower() if "://" in source else ""
    if scheme in ("", "file"):
        path = _local_path(source, shown) if scheme else source
        try:
            return open(path, "rb")  # pylint: disable=consider-using-with
        except OSError as err:
            raise ArtifactError("cannot be read: %s" % (err.strerror or err), subject=shown,
                                hint="check the path of the artifact source") from None
    if scheme not in ("http", "https"):
        raise ArtifactError("unsupported source scheme %r" % scheme, subject=shown,
                            hint="use an https:// or http:// URL, a file:// URL or a path")
    return _open_url(source, shown, timeout, ca_file)


def _local_path(source, shown):
    parts = urllib.parse.urlsplit(source)
    if parts.netloc not in ("", "localhost"):
        raise ArtifactError("file:// URLs must name a local file (file:///path)", subject=shown,
                            hint="use file:///absolute/path")
    return urllib.parse.unquote(parts.path)


def _open_url(source, shown, timeout, ca_file):
    try:
        parts = urllib.parse.urlsplit(source)
        parts.port  # pylint: disable=pointless-statement  # raises ValueError on a bad port
    except ValueError as err:
        raise ArtifactError("is not a valid URL: %s" % err, subject=shown, hint="fix the artifact source") from None
    user = parts.username
    password = parts.password
    clean = urllib.parse.urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, parts.query, ""))
    request = urllib.request.Request(clean, headers={"User-Agent": "manent.kubernetes"})
    if user is not None:
        token = "%s:%s" % (urllib.parse.unquote(user), urllib.parse.unquote(password or ""))
        # unredirected: the credentials are not sent again to wherever a redirect points
        request.add_unredirected_header("Authorization",
                                        "Basic " + base64.b64encode(token.encode("utf-8")).decode("ascii"))
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as err:
        raise ArtifactError("cannot load the CA file %s: %s" % (ca_file, _reason(err)), subject=shown,
                            hint="check the plugin setting ca_file") from None
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
    try:
        return opener.open(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        err.close()
        hint = "check the URL and that the artifact was published"
        if err.code in (401, 403):
            hint = "check the repository credentials and permissions"
        raise ArtifactError("download failed: HTTP %d %s" % (err.code, err.reason), subject=shown,
                            hint=hint) from None
    except urllib.error.URLError as err:
        reason = err.reason
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise ArtifactError("TLS certificate verification failed: %s" % (reason.verify_message or reason),
                                subject=shown, hint="set the plugin setting ca_file to the repository's CA "
                                                    "bundle") from None
        raise ArtifactError("download failed: %s" % _scrub(reason, user, password), subject=shown,
                            hint="check the URL, DNS and the network") from None
    except (OSError, ValueError) as err:
        raise ArtifactError("download failed: %s" % _scrub(err, user, password), subject=shown,
                            hint="check the URL and the network; the timeout was %ss" % timeout) from None


def _scrub(reason, user, password):
    text = str(reason) or type(reason).__name__
    for secret in (password, user):
        if secret:
            text = text.replace(secret, "***")
    return text


# --- descriptor ---------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class Descriptor:
    """The artifact descriptor: what is deployed and where it comes from."""

    type: str
    name: str
    version: str
    source: str
    sha256: str

    @classmethod
    def from_dict(cls, data, allow_unverified=False):
        """Validate a descriptor mapping; raise InputError naming the field (``artifact.<field>``)."""
        if not isinstance(data, dict):
            raise InputError("must be a mapping with type, name, version, source and sha256", subject="artifact")
        kind = _field(data, "type", required=False) or ARTIFACT_TYPE
        if kind != ARTIFACT_TYPE:
            raise InputError("is %r, this plugin deploys type %s" % (kind, ARTIFACT_TYPE), subject="artifact.type",
                             hint="use the plugin that handles %s artifacts" % kind)
        name = _field(data, "name")
        if not _NAME.fullmatch(name):
            raise InputError("%r is not a valid name" % name, subject="artifact.name",
                             hint="use at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
                                  "letter or digit (it becomes a label value)")
        version = _field(data, "version")
        source = _field(data, "source")
        sha256 = normalize_sha256(data.get("sha256"), field="artifact.sha256")
        if not sha256 and not allow_unverified:
            raise InputError("is missing", subject="artifact.sha256",
                             hint="publish the sha256 of the artifact file with it (sha256sum)")
        return cls(type=kind, name=name, version=version, source=source, sha256=sha256)

    @property
    def display_name(self):
        return display_name(self.source)

    @property
    def redacted_source(self):
        return redact_url(self.source)


def _field(data, field, required=True):
    value = data.get(field)
    subject = "artifact.%s" % field
    if value is None or value == "":
        if required:
            raise InputError("is missing", subject=subject, hint="add %s to the artifact descriptor" % field)
        return ""
    if not isinstance(value, str):
        raise InputError("must be a string, got %s %r" % (type(value).__name__, value), subject=subject,
                         hint='quote it in YAML, e.g. %s: "%s"' % (field, value))
    return value.strip()
