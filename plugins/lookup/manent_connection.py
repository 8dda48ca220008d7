# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: manent_connection
author:
  - manent developers (@manent-io)
version_added: "1.1.0"
short_description: The connection options of the current inventory host, for the manent modules
description:
  - Reads the connection variables of the host being templated (C(manent_api_server), C(manent_api_port),
    C(manent_token), C(manent_client_cert), C(manent_client_key), C(manent_ca), C(manent_ca_file),
    C(manent_kubeconfig), C(manent_context), C(manent_insecure_skip_tls_verify)) and returns the connection options
    of the C(manent.kubernetes.manent) module group as one dictionary, ready for C(module_defaults).
  - The deploy role connects every task this way. In your own playbooks it gives your manent tasks the same
    connection as the role's, from the same inventory variables.
  - How the host is reached, in this order. A host with C(manent_api_server), a token, a client certificate or a CA
    of its own connects with them; C(api_server) defaults to the inventory host name. A host with only
    C(manent_kubeconfig) (and C(manent_context)) connects through the kubeconfig, and C(api_server) is left empty.
    A host with none of these variables, when the environment has C(K8S_AUTH_HOST) (AWX's Kubernetes credential),
    connects with the environment's credential, and C(api_server) is left empty.
  - With the term C(via), returns instead how the host is reached, one of C(host variables), C(kubeconfig) or
    C(environment).
  - Options left empty are not returned, so a module's own default applies. No value is ever printed; the result
    holds the token, so give C(no_log) to a task that shows it.
  - Runs on the controller, in Python; the deploy role uses it rather than a Jinja expression because a template is
    compiled again by every task and host that reads it (docs/performance.md).
options:
  _terms:
    description: Nothing for the connection options; C(via) for how the host is reached.
    required: false
  ca_file:
    description: CA bundle used when the host sets neither C(manent_ca) nor C(manent_ca_file) and connects with its
      own variables (the role's C(deploy_ca_file)).
    type: str
    default: ""
  insecure_skip_tls_verify:
    description: Used when the host does not set C(manent_insecure_skip_tls_verify) (the role's
      C(deploy_insecure_skip_tls_verify)), read as the C(bool) filter reads it. Development only.
    type: raw
    default: false
  request_timeout:
    description: Seconds per API request (the role's C(deploy_request_timeout)), passed on as given (the modules
      check it).
    type: raw
    default: 30
  work_dir:
    description: The modules' working directory; empty for their default.
    type: str
    default: ""
  option_names:
    description: The variable that sets each option, for error messages (C(option_names) of the module group);
      returned as given, omitted when empty.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Read the release history of each cluster with the inventory's connection variables
  manent.kubernetes.manent_history:
    application: shop
    environment: prod
    namespace: shop
  module_defaults:
    group/manent.kubernetes.manent: "{{ lookup('manent.kubernetes.manent_connection') }}"
"""

RETURN = r"""
_raw:
  description: One dictionary, the connection options of the host (C(api_server), C(port),
    C(insecure_skip_tls_verify), C(request_timeout), and those of C(token), C(client_cert), C(client_key), C(ca),
    C(ca_file), C(work_dir), C(kubeconfig), C(context), C(option_names) that are not empty).
  type: list
  elements: dict
"""

import os

from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import BOOLEANS_TRUE
from ansible.plugins.lookup import LookupBase

from ansible_collections.manent.kubernetes.plugins.module_utils.base import k8s_auth_env

# The host variables of a connection (manent_<option>), in the order the module group's options are listed.
OWN = ("api_server", "token", "client_cert", "client_key", "ca", "ca_file")
SETTINGS = ("token", "client_cert", "client_key", "ca", "ca_file", "work_dir", "kubeconfig", "context")


def _truthy(value):
    """The ``bool`` filter of Jinja templates: True, yes, on, 1 and true (any case) are true."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        value = value.lower()
    return value in BOOLEANS_TRUE


def _value(given, name):
    found = given(name)
    return "" if found is None else found


def via(given, environ):
    """How a host is reached: "host variables" (its own API server, credential or CA), "kubeconfig" (manent_kubeconfig
    alone) or "environment" (none of them, and AWX's Kubernetes credential in the environment, as the modules read it:
    base/k8s_auth_env.py). ``given(name)`` is the value of the host variable ``manent_<name>``, or None when the host
    does not define it; ``environ`` the controller's environment."""
    if any(_value(given, name) for name in OWN):
        return "host variables"
    if len(_value(given, "kubeconfig")) > 0:
        return "kubeconfig"
    return "environment" if k8s_auth_env.read(environ) is not None else "host variables"


def connection(given, inventory_hostname, environ, ca_file="", insecure=False, request_timeout=30, work_dir="",
               option_names=None):
    """The connection options of a host (``given`` and ``environ`` as for ``via``)."""
    elsewhere = via(given, environ) != "host variables"
    api_server = given("api_server")
    port = given("api_port")
    verify_off = given("insecure_skip_tls_verify")
    result = {"api_server": ("" if elsewhere else inventory_hostname) if api_server is None else api_server,
              "port": 6443 if port is None else port,
              "insecure_skip_tls_verify": _truthy(insecure if verify_off is None else verify_off),
              "request_timeout": request_timeout}
    settings = {name: _value(given, name) for name in SETTINGS}
    settings["ca_file"] = settings["ca_file"] or ("" if elsewhere else ca_file)
    settings["work_dir"] = work_dir
    result.update((name, setting) for name, setting in settings.items() if setting)
    if option_names:
        result["option_names"] = option_names
    return result


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        if list(terms) not in ([], ["via"]):
            raise AnsibleError("manent_connection takes no term (the connection options) or the term 'via' (how the "
                               "host is reached), not %s" % ", ".join(repr(str(term)) for term in terms))
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        if "inventory_hostname" not in variables:
            raise AnsibleError("manent_connection reads the variables of an inventory host: use it in a task's "
                               "template")

        templated = {}

        def given(name):
            """Each variable templated once per call (via and connection both read most of them)."""
            key = "manent_" + name
            if key not in variables:
                return None
            if key not in templated:
                # ansible-core before 2.19 hands host variables over untemplated, later ones templated (a no-op then)
                templated[key] = self._templar.template(variables[key])
            return templated[key]

        if terms:
            return [via(given, os.environ)]
        return [connection(given, variables["inventory_hostname"], os.environ, ca_file=self.get_option("ca_file"),
                           insecure=self.get_option("insecure_skip_tls_verify"),
                           request_timeout=self.get_option("request_timeout"), work_dir=self.get_option("work_dir"),
                           option_names=self.get_option("option_names"))]
