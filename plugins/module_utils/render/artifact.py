# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The artifact: verify its sha256, tell what it is and read it without trusting it (docs/requirements.md §1).

An artifact is a plain manifest (YAML or JSON), a ``.tar.gz`` of manifests, or a packaged Helm chart
(a ``.tgz`` whose members are ``<name>/Chart.yaml``, ``<name>/templates/...``). Archives are read as a
stream and every member is checked before anything is read: no absolute paths, no ``..``, no links,
devices or fifos, and bounded member count and uncompressed size (a gzip bomb stops at the limit).

The artifact is already a local file here: the deploy role downloads a URL once into a controller cache keyed
by its sha256 (``get_url`` with the checksum) and uses a controller path in place. Rendering reads it once,
into a private copy whose sha256 is checked while it is written (``verified_copy``): what is parsed, or given
to helm (helm.py), is exactly what was verified, even if the file is replaced meanwhile.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import shutil
import tarfile
import tempfile
import zlib

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import SHA256_HEX, bare_sha256, digest_problem
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ArtifactError, InputError

MANIFEST = "manifest"
ARCHIVE = "archive"
CHART = "chart"

MAX_TOTAL_SIZE = 256 * 1024 * 1024
MAX_MEMBERS = 10000
MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")

_GZIP_MAGIC = b"\x1f\x8b"
_REPUBLISH = "re-publish the artifact, or fix the sha256 in the artifact descriptor"


# --- digests ------------------------------------------------------------------------------------

def normalize_sha256(value, field="sha256"):
    """Lower-case hex digest; accepts a ``sha256:`` prefix. Empty/None gives ''."""
    if value is None:
        return ""
    if not isinstance(value, str):
        problem = digest_problem(value)
        if problem:
            raise InputError(problem, subject=field)
        value = str(value)
    text = bare_sha256(value)
    if text and not SHA256_HEX.fullmatch(text):
        raise InputError("is not a sha256 digest (64 hex digits): %r" % value, subject=field,
                         hint="use the output of sha256sum for the artifact file")
    return text


def _expected(expected_sha256, allow_unverified, label):
    expected = normalize_sha256(expected_sha256)
    if not expected and not allow_unverified:
        raise ArtifactError("no sha256 given: the artifact cannot be verified", subject=label,
                            hint="add sha256 to the artifact descriptor (sha256sum of the published file)")
    return expected


def _check(expected, actual, label):
    if expected and actual != expected:
        raise ArtifactError("sha256 mismatch: expected %s, got %s" % (expected, actual), subject=label,
                            hint="the file is not the one that was published; " + _REPUBLISH)
    return actual


@contextlib.contextmanager
def verified_copy(path, expected_sha256, allow_unverified=False, name=None, directory=None,
                  max_size=MAX_TOTAL_SIZE):
    """Copy the artifact, in one read, into a private temporary directory (mode 0700; the copy keeps the file's
    name, which error messages and helm show) and check the sha256 of the bytes copied; yield
    ``(copy path, digest)`` and remove the copy afterwards.

    Reading the source only once closes the gap between verifying a file and reading it again: the copy
    cannot change after it was verified. An empty ``expected_sha256`` is an error unless ``allow_unverified``
    is true."""
    label = name or path
    expected = _expected(expected_sha256, allow_unverified, label)
    scratch = tempfile.mkdtemp(prefix="manent-artifact-", dir=directory)
    copy = os.path.join(scratch, os.path.basename(path) or "artifact")
    try:
        digest, size = hashlib.sha256(), 0
        try:
            with open(path, "rb") as source, open(copy, "xb") as out:
                for block in iter(lambda: source.read(1024 * 1024), b""):
                    size += len(block)
                    if size > max_size:
                        raise ArtifactError("larger than %d MiB" % (max_size // (1024 * 1024)), subject=label,
                                            hint="an artifact holds manifests or a chart; check the file")
                    digest.update(block)
                    out.write(block)
        except OSError as err:
            raise ArtifactError("cannot read the artifact: %s" % (err.strerror or err), subject=label,
                                hint="check the artifact path on the controller") from None
        yield copy, _check(expected, digest.hexdigest(), label)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --- kind of artifact ---------------------------------------------------------------------------

def detect(path, max_total_size=MAX_TOTAL_SIZE, max_members=MAX_MEMBERS):
    """'chart', 'archive' or 'manifest'.

    A gzip tar with a member ``<name>/Chart.yaml`` (exactly one level deep) is a chart; any other gzip tar is
    a manifest archive; a gzip file that is not a tar is an error; anything else is a plain manifest. The
    archive's members are checked (see :func:`_iterate`) while detecting.
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
    with _open_tar(path, max_total_size, max_members) as tar:
        for _member, name in _iterate(tar, label, max_total_size, max_members):
            parts = name.split("/")
            if len(parts) == 2 and parts[1] == "Chart.yaml":
                charts.add(parts[0])
    if len(charts) > 1:
        raise ArtifactError("holds several charts (%s)" % ", ".join(sorted(charts)), subject=label,
                            hint="publish one chart per artifact (helm package <dir>)")
    return CHART if charts else ARCHIVE


# --- archive members ----------------------------------------------------------------------------

def _iterate(tar, source, max_total_size, max_members):
    """Yield (member, normalized name) of an open tar after checking each member; raise ArtifactError on the first
    bad one.

    Rejected: absolute paths, ``..`` components, symlinks, hard links, devices, fifos and other special
    members, names that appear twice, more than ``max_members`` members, more than ``max_total_size``
    uncompressed bytes. Works on stream-mode tars: the size check happens before the data is read.
    """
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


class _Bounded:
    """A read-only stream that stops with ArtifactError after ``limit`` bytes: a gzip bomb hidden where the member
    sizes do not count it (long-name or pax headers, padding) is cut off as soon as it passes the limit."""

    def __init__(self, stream, limit, source):
        self._stream = stream
        self._limit = limit
        self._source = source
        self._read = 0

    def read(self, size=-1):
        if size is None or size < 0:
            size = self._limit - self._read + 1
        data = self._stream.read(min(size, self._limit - self._read + 1))
        self._read += len(data)
        if self._read > self._limit:
            raise ArtifactError("unpacks to more than %d bytes" % self._limit, subject=self._source,
                                hint="the archive is too large or a compression bomb; check what was packaged")
        return data

    def close(self):
        self._stream.close()


def _stream_limit(max_total_size, max_members):
    """Bytes a valid archive within the limits can take unpacked: the members' data plus headers and padding."""
    return max_total_size + (max_members + 2) * 2048 + 1024 * 1024


class _GzipTar:
    """A streamed tar read through gzip.GzipFile: Python 3.11's own "r|gz" reader mis-reads gzip headers that
    carry an extra field, which is exactly what ``helm package`` writes."""

    def __init__(self, path, limit):
        self._raw = open(path, "rb")  # pylint: disable=consider-using-with
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="rb")
        try:
            bounded = _Bounded(self._gz, limit, os.path.basename(path))
            self.tar = tarfile.open(fileobj=bounded, mode="r|", encoding="utf-8")  # pylint: disable=consider-using-with
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


def _open_tar(path, max_total_size=MAX_TOTAL_SIZE, max_members=MAX_MEMBERS):
    label = os.path.basename(path)
    try:
        return _GzipTar(path, _stream_limit(max_total_size, max_members))
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
    with _open_tar(path, max_total_size, max_members) as tar:
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
    size = os.path.getsize(path)
    if size > MAX_TOTAL_SIZE:
        raise ArtifactError("takes %d bytes, more than the limit of %d bytes for manifests" % (size, MAX_TOTAL_SIZE),
                            subject=label, hint="an artifact this large is not a set of manifests; check what was "
                                                "published")
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return [(label, data.decode("utf-8-sig"))]
    except UnicodeDecodeError as err:
        raise ArtifactError("is not UTF-8 text (byte %d)" % err.start, subject=label,
                            hint="save the manifest as UTF-8") from None
