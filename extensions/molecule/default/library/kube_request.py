# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scenario's own module: one request to the API server through the collection's client, so that reading and
removing test objects verifies TLS exactly as the collection's modules do (ansible.builtin.uri uses Python's default
context, which on Python 3.13 refuses the minimal CA of the local clusters, as it would refuse EKS's)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kube_request
short_description: One request to a Kubernetes API server (molecule scenario helper)
description: Sends one GET or DELETE with the collection's client and returns the status and the decoded body.
options:
  api_server: {type: str, required: true, description: The API server.}
  token: {type: str, description: Bearer token (inline, file:, env:).}
  ca_file: {type: path, description: CA bundle of the cluster.}
  method: {type: str, default: GET, choices: [GET, DELETE], description: The verb.}
  path: {type: str, required: true, description: The request path.}
  missing_ok: {type: bool, default: false, description: A 404 is a result (status 404), not an error.}
author: manent developers
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.common import argument_spec, connection
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube


def main():
    module = AnsibleModule(argument_spec=argument_spec({
        "method": {"type": "str", "default": "GET", "choices": ["GET", "DELETE"]},
        "path": {"type": "str", "required": True},
        "missing_ok": {"type": "bool", "default": False},
    }))
    params = module.params
    try:
        with Kube(connection(params)) as kube:
            try:
                answer = kube.request(params["method"], params["path"], subject=params["path"])
                status, body = answer.status, answer.data
            except ApiError as exc:
                if not (params["missing_ok"] and getattr(exc, "status", None) == 404):
                    raise
                status, body = 404, None
    except ManentError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=params["method"] == "DELETE" and status != 404, status=status, json=body)


if __name__ == "__main__":
    main()
