# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters that replaced role tasks (docs/performance.md, "Through ansible-playbook and the role"): the
artifact cache check (manent_file_sha256, instead of a stat module process), the wave plan (manent_waves,
instead of three set_fact tasks) and what the role reads from its artifact descriptor (manent_artifact, instead of
seven Jinja variables reading each other)."""

from __future__ import annotations

import hashlib

from ansible_collections.manent.kubernetes.plugins.filter.manent import (
    manent_artifact, manent_artifact_location, manent_file_sha256, manent_waves)

SHA = "ab" * 32


def test_file_sha256_of_a_file_and_empty_when_there_is_no_regular_file(tmp_path, monkeypatch):
    artifact = tmp_path / "app.yaml"
    artifact.write_bytes(b"kind: ConfigMap\n")
    assert manent_file_sha256(str(artifact)) == hashlib.sha256(b"kind: ConfigMap\n").hexdigest()
    assert manent_file_sha256(str(tmp_path / "missing.yaml")) == ""
    assert manent_file_sha256(str(tmp_path)) == ""  # a directory
    assert manent_file_sha256("") == "" and manent_file_sha256(None) == ""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert manent_file_sha256("~/app.yaml") == hashlib.sha256(b"kind: ConfigMap\n").hexdigest()


def test_waves_in_order_of_first_appearance_hosts_keep_their_order():
    plan = manent_waves(["eu1a", "us1a", "eu1b"], ["eu-1", "us-1", "eu-1"])
    assert plan == {"keys": ["eu-1", "us-1"], "waves": [["eu1a", "eu1b"], ["us1a"]],
                    "number": {"eu1a": 1, "eu1b": 1, "us1a": 2}}


def test_waves_listed_order_first_and_unknown_values_ignored():
    plan = manent_waves(["eu1a", "us1a", "eu1b", "ap1a"], ["eu-1", "us-1", "eu-1", "ap-1"], ["us-1", "mars", "ap-1"])
    assert plan["keys"] == ["us-1", "ap-1", "eu-1"]
    assert plan["waves"] == [["us1a"], ["ap1a"], ["eu1a", "eu1b"]]
    assert plan["number"] == {"us1a": 1, "ap1a": 2, "eu1a": 3, "eu1b": 3}


def test_waves_of_no_hosts_and_of_hosts_without_a_value():
    assert manent_waves([], []) == {"keys": [], "waves": [], "number": {}}
    assert manent_waves(["a", "b"], ["", ""])["waves"] == [["a", "b"]]


def location(source, cache_dir="", base_dir="", name="shop", version="1.2.0", sha256=SHA):
    """Where the role finds the artifact of this descriptor, as vars/main.yml reads it."""
    descriptor = {"type": "kubernetes", "name": name, "version": version, "source": source, "sha256": sha256}
    return manent_artifact_location(manent_artifact(descriptor), cache_dir, base_dir)


def test_artifact_location_of_a_url_is_its_download_in_the_cache():
    where = location("https://repo.example/shop/shop-1.2.0.tgz?x=1", "/cache")
    assert where == {
        "is_url": True, "source_path": "https://repo.example/shop/shop-1.2.0.tgz?x=1", "file": "shop-1.2.0.tgz",
        "path": "/cache/%s/shop-1.2.0.tgz" % SHA}
    # a URL whose path names no file: <name>-<version>; any scheme counts, in any case
    assert location("S3+HTTPS://bucket/", "/cache")["path"] == "/cache/%s/shop-1.2.0" % SHA


def test_artifact_location_of_a_controller_path_is_the_path_in_place(monkeypatch):
    monkeypatch.setenv("PWD", "/started/here")
    absolute = location("/srv/artifacts/shop.yaml", "/cache", version="1")
    assert absolute == {
        "is_url": False, "source_path": "/srv/artifacts/shop.yaml", "file": "shop.yaml",
        "path": "/srv/artifacts/shop.yaml"}
    assert location("dist/shop.yaml", "/cache", "/base")["path"] == "/base/dist/shop.yaml"
    assert location("dist/shop.yaml", "/cache")["path"] == "/started/here/dist/shop.yaml"
    # not a URL: no scheme, or one that does not start with a letter
    assert not location("1http://x/y.tgz")["is_url"]
    assert location("", version="1")["file"] == "shop-1"


def test_artifact_name_version_and_digest_as_the_role_reads_them():
    got = manent_artifact({"name": "shop", "version": 1.1, "source": "s.yaml", "sha256": SHA.upper()})
    assert got == {"name": "shop", "version": "1.1", "source": "s.yaml", "sha256": SHA}
    assert manent_artifact({"name": "shop"}, "shop-chart")["name"] == "shop-chart"  # deploy_artifact_name wins
    # a missing or null field reads as empty; anything but a dict as an empty descriptor
    for descriptor in ({"name": None, "version": None}, {}, None, "shop.yaml"):
        assert manent_artifact(descriptor) == {"name": "", "version": "", "source": "", "sha256": ""}
