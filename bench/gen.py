# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generate the benchmark's plain manifests: N objects of mixed kinds, one YAML stream.

    python bench/gen.py --count 300 [--keep 270] [--image-of-first IMAGE] [--set NAME] > objects.yaml

Object i has the kind KINDS[i % 10]: 3 ConfigMaps, 1 Secret, 1 ServiceAccount, 2 Services and
3 Deployments (1 replica of the pause image; kwok's fake nodes make their pods Ready) in every 10 objects.
``--keep K`` drops objects K..N-1 (the "10 % removed" scenario: the last tenth, of every kind).
``--image-of-first`` changes the image of the first Deployment only (the "one image changed" scenario).
The chart bench/chart/manent-bench renders the same objects from values count, keep and imageOfFirst.
Objects carry no namespace: every tool puts them in the namespace it deploys to.
"""

import argparse
import sys

import yaml

KINDS = ("ConfigMap", "ConfigMap", "ConfigMap", "Secret", "ServiceAccount", "Service", "Service",
         "Deployment", "Deployment", "Deployment")
IMAGE = "registry.k8s.io/pause:3.10"
SET_LABEL = "bench.manent.io/set"


def name_of(i):
    return "%s-%04d" % (KINDS[i % len(KINDS)].lower(), i)


def deployment_of(i):
    """The Deployment a Service at index i selects: the next Deployment at or after it (wrapping)."""
    j = i
    while KINDS[j % len(KINDS)] != "Deployment":
        j += 1
    return name_of(j)


def obj(i, set_name, image_of_first=None):
    kind = KINDS[i % len(KINDS)]
    meta = {"name": name_of(i), "labels": {SET_LABEL: set_name, "bench.manent.io/index": str(i)}}
    if kind == "ConfigMap":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta,
                "data": {"index": str(i), "greeting": "hello from object %d" % i, "settings.ini": "a=1\nb=%d\n" % i}}
    if kind == "Secret":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "type": "Opaque",
                "stringData": {"password": "bench-not-a-secret-%d" % i}}
    if kind == "ServiceAccount":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta}
    if kind == "Service":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta,
                "spec": {"selector": {"app": deployment_of(i)},
                         "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}
    image = image_of_first if (image_of_first and i == KINDS.index("Deployment")) else IMAGE
    labels = {"app": name_of(i)}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": image,
                                                           "ports": [{"containerPort": 8080}],
                                                           "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}


def objects(count, keep=None, image_of_first=None, set_name="bench"):
    keep = count if keep is None else keep
    return [obj(i, set_name, image_of_first) for i in range(min(count, keep))]


def write(path, count, keep=None, image_of_first=None, set_name="bench"):
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump_all(objects(count, keep, image_of_first, set_name), handle, sort_keys=False)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--keep", type=int)
    parser.add_argument("--image-of-first")
    parser.add_argument("--set", default="bench")
    args = parser.parse_args()
    yaml.safe_dump_all(objects(args.count, args.keep, args.image_of_first, args.set), sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
