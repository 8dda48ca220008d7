# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading artifacts safely: verification, detection, archive members, manifests."""

from __future__ import annotations

import gzip
import io
import os
import tarfile

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.render import artifact
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ArtifactError, InputError
from tests.helpers import sha256_of

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
                if "size" in member:  # a header claiming a size with no data behind it (addfile refuses that)
                    header = info.tobuf(tar.format, tar.encoding, tar.errors)
                    tar.fileobj.write(header)
                    tar.offset += len(header)
                else:
                    tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return str(path)


def _bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def _archive_cases():
    with open(os.path.join(FIXTURES, "archives.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


# --- digests --------------------------------------------------------------------------------------

def verify(path, expected, **kw):
    """The digest artifact.verified_copy checks (what rendering reads), its errors raised as they come."""
    with artifact.verified_copy(path, expected, **kw) as (_copy, digest):
        return digest


def test_verify_accepts_matching_digest_in_any_spelling(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x")
    digest = sha256_of(b"x")
    assert verify(str(path), digest) == digest
    assert verify(str(path), "sha256:" + digest.upper()) == digest


def test_verify_mismatch_names_file_digests_and_fix(tmp_path):
    path = tmp_path / "shop-1.4.0.yaml"
    path.write_bytes(b"tampered")
    with pytest.raises(ArtifactError) as info:
        verify(str(path), SHA_ZERO, name="shop-1.4.0.yaml")
    assert str(info.value) == (
        "shop-1.4.0.yaml: sha256 mismatch: expected %s, got %s (the file is not the one that was published; "
        "re-publish the artifact, or fix the sha256 in the artifact descriptor)" % (SHA_ZERO, sha256_of(b"tampered")))


def test_verify_empty_digest_needs_allow_unverified(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x")
    with pytest.raises(ArtifactError, match="no sha256 given"):
        verify(str(path), "")
    assert verify(str(path), "", allow_unverified=True) == sha256_of(b"x")


def test_verified_copy_is_private_stable_and_removed(tmp_path):
    """Render reads the artifact once: the copy it parses keeps the file's name, does not follow later changes of
    the source, lives in a private directory, and is gone afterwards (also when verification fails)."""
    path = tmp_path / "shop-1.4.0.yaml"
    path.write_bytes(b"kind: ConfigMap\n")
    digest = sha256_of(b"kind: ConfigMap\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with artifact.verified_copy(str(path), "sha256:" + digest, directory=str(scratch)) as (copy, got):
        assert got == digest
        assert os.path.basename(copy) == "shop-1.4.0.yaml" and os.path.dirname(os.path.dirname(copy)) == str(scratch)
        assert os.stat(os.path.dirname(copy)).st_mode & 0o077 == 0
        path.write_bytes(b"kind: Secret\n")  # replaced after the check: the copy is what was verified
        with open(copy, "rb") as handle:
            assert handle.read() == b"kind: ConfigMap\n"
    assert not os.listdir(scratch)
    with pytest.raises(ArtifactError, match="sha256 mismatch: expected %s, got %s" % (digest, sha256_of(b"kind: Secret\n"))):
        with artifact.verified_copy(str(path), digest, directory=str(scratch), name="shop-1.4.0.yaml"):
            pytest.fail("a mismatching artifact must not be yielded")
    assert not os.listdir(scratch)


def test_verified_copy_needs_a_digest_a_readable_file_and_a_bounded_size(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x" * 10)
    with pytest.raises(ArtifactError, match="no sha256 given"):
        with artifact.verified_copy(str(path), ""):
            pass
    with artifact.verified_copy(str(path), "", allow_unverified=True) as (_copy, got):
        assert got == sha256_of(b"x" * 10)
    with pytest.raises(ArtifactError, match="a.yaml: larger than 0 MiB"):
        with artifact.verified_copy(str(path), "", allow_unverified=True, max_size=5, name="a.yaml"):
            pass
    with pytest.raises(ArtifactError, match="missing.yaml: cannot read the artifact: No such file"):
        with artifact.verified_copy(str(tmp_path / "missing.yaml"), SHA_ZERO, name="missing.yaml"):
            pass


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

def _read(path):
    return artifact.read_archive_manifests(path)


@pytest.mark.parametrize("reader", [artifact.detect, _read], ids=["detect", "read"])
@pytest.mark.parametrize("case", _archive_cases(), ids=lambda case: case["id"])
def test_unsafe_members_are_refused(tmp_path, case, reader):
    path = make_targz(tmp_path / "evil.tgz", case["members"])
    with pytest.raises(ArtifactError) as info:
        reader(path)
    assert info.value.subject == "evil.tgz"
    assert info.value.message == case["error"]
    assert os.listdir(str(tmp_path)) == ["evil.tgz"]


@pytest.mark.parametrize("reader", [artifact.detect, artifact.read_archive_manifests], ids=["detect", "read"])
def test_too_many_members(tmp_path, reader):
    path = make_targz(tmp_path / "many.tgz", ["m%d.yaml" % i for i in range(6)])
    assert len(artifact.read_archive_manifests(path, max_members=6)) == 6
    with pytest.raises(ArtifactError) as info:
        reader(path, max_members=5)
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
