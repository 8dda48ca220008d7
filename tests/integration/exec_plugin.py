# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A kubeconfig exec credential plugin of the tests: mints a token of a ServiceAccount through the TokenRequest API
(600 s, the API server's minimum) and answers an ExecCredential (client.authentication.k8s.io/v1) whose
expirationTimestamp is only ``lifetime`` seconds ahead, so a run renews it many times.

Its state directory (argv[1]) holds ``config.json`` ({server, ca_file, admin_token_file, namespace, lifetime, mode})
and ``sa`` (the ServiceAccount to mint for, read at each run: the tests rotate it). Each run appends a line
{"sa", "token", "exec_info"} to ``runs.jsonl``. ``mode``: ok, fail (exits 1, a secret on stderr), garbage (prints
something that is not an ExecCredential), cert (answers the cluster's admin client certificate and key, v1beta1)."""

import datetime
import fcntl
import json
import os
import ssl
import sys
import urllib.request


def main(state):
    with open(os.path.join(state, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    if config.get("mode") == "fail":
        sys.stderr.write("cannot log in: session secret-stderr-1234567890 expired\n")
        return 1
    if config.get("mode") == "garbage":
        sys.stdout.write("garbage-output-0987654321 not json\n")
        return 0
    if config.get("mode") == "cert":  # the cluster's admin client certificate, as an ExecCredential
        status = {}
        for field, name in (("clientCertificateData", "admin.crt"), ("clientKeyData", "admin.key")):
            with open(os.path.join(os.path.dirname(config["admin_token_file"]), name), encoding="utf-8") as handle:
                status[field] = handle.read()
        with open(os.path.join(state, "runs.jsonl"), "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"sa": "", "token": "", "exec_info": "", "stdin_tty": os.isatty(0)}) + "\n")
        json.dump({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": status},
                  sys.stdout)
        return 0
    with open(os.path.join(state, "sa"), encoding="utf-8") as handle:
        sa = handle.read().strip()
    with open(config["admin_token_file"], encoding="utf-8") as handle:
        admin = handle.read().strip()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    context.load_verify_locations(config["ca_file"])
    request = urllib.request.Request(
        "%s/api/v1/namespaces/%s/serviceaccounts/%s/token" % (config["server"], config["namespace"], sa),
        data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 600}}).encode(),
        headers={"Authorization": "Bearer " + admin, "Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, context=context, timeout=20) as answer:  # nosec B310 - the test cluster
        token = json.load(answer)["status"]["token"]
    expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float(config["lifetime"]))
    with open(os.path.join(state, "runs.jsonl"), "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(json.dumps({"sa": sa, "token": token, "exec_info": os.environ.get("KUBERNETES_EXEC_INFO"),
                                 "stdin_tty": os.isatty(0)}) + "\n")
    json.dump({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
               "status": {"token": token, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
