#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: manent_analysis
short_description: Judge a rollout step by metric checks against Prometheus, with one verdict that explains itself
version_added: 1.0.0
description:
  - Runs a list of checks against the Prometheus HTTP API (C(/api/v1/query)) and returns one verdict, C(Successful),
    C(Failed), C(Inconclusive) or C(Error), with per check the rendered queries, the evaluation time, the values with
    their labels, the condition, the counters and a one-line reason. The measurement loop runs inside the module.
  - Each check measures every O(checks[].interval) until O(checks[].count) measurements are decided. A measurement
    pins one evaluation time and sends each of the check's queries once at that time (the traffic floor first, then
    the query, then the baseline), and is C(Successful), C(Failed), C(Inconclusive) or C(Error); an error never
    counts as a success.
  - Queries are templated with C(${namespace}), C(${candidate_slot}), C(${stable_slot}), C(${candidate_service}),
    C(${stable_service}), C(${slot}) and C(${service}) (the side a query is about), C(${window}) (the seconds since
    the step's start, as C(95s)), C(${window_seconds}) and C(${start}). An unknown placeholder is refused before any
    query is sent; C($${) writes a literal C(${).
  - No check is measured before O(context.start) plus O(min_window), so that C(${window}) never reaches before the
    step.
  - A check is C(Failed) when more measurements failed than O(checks[].failure_limit), C(Error) when more
    consecutive measurements were errors than O(checks[].consecutive_error_limit) (at once when Prometheus refuses
    the query), C(Inconclusive) when more were inconclusive than O(checks[].inconclusive_limit), C(Successful) once
    O(checks[].count) measurements are decided without any of these. The analysis is C(Failed) if an enforced check
    failed, else C(Error), else C(Inconclusive), else C(Successful); once an enforced check is not C(Successful) the
    other checks stop.
  - The task fails when the verdict is not C(Successful) (except in check mode), with the verdict, reason and checks
    in its result, so that a playbook can C(rescue) it and read RV(verdict).
  - O(mode=preflight) sends every query once and decides nothing; it fails when Prometheus refuses a query
    (C(bad_data), a string result), cannot be reached, or the answer is not one Prometheus gives (another API or a
    web page at O(provider.url)). Run it before the first weight change.
  - The rules in full, and a worked example, are in the collection's C(docs/analysis.md).
author:
  - manent developers (@manent-io)
extends_documentation_fragment:
  - manent.kubernetes.connection
  - manent.kubernetes.option_names
attributes:
  check_mode:
    support: full
    description: The analysis runs and reports the verdict it reached; a verdict other than C(Successful) is a
      warning instead of a failure. A preflight runs and fails as without check mode. The module never changes
      anything.
  diff_mode:
    support: none
    description: The module changes nothing.
options:
  provider:
    description: The Prometheus to query.
    type: dict
    required: true
    suboptions:
      url:
        description:
          - Base URL of Prometheus (or of an API compatible with it), for example C(https://prometheus.example:9090)
            or C(https://host/prometheus); C(/api/v1/query) is appended.
          - Credentials in the URL are refused. Redirects are not followed. Proxies come from the environment
            (C(https_proxy), C(no_proxy)).
        type: str
        required: true
      bearer_token:
        description:
          - Bearer token, inline, C(file:/path) or C(env:NAME). Never logged or returned, in any form (escaped, URL
            encoded) or piece of 8 characters or more.
          - At least 4 characters.
        type: str
      username:
        description: User of basic auth, with O(provider.password).
        type: str
      password:
        description:
          - Password of basic auth, inline, C(file:/path) or C(env:NAME). Never logged or returned, in any form
            (escaped, URL encoded, the base64 of C(user:password)) or piece of 8 characters or more.
          - At least 4 characters.
        type: str
      headers:
        description:
          - Extra request headers, for example C(X-Scope-OrgID) of a multi-tenant Prometheus.
          - The values of C(Authorization), C(Proxy-Authorization) and the headers named in
            O(provider.secret_headers) are credentials, masked like O(provider.bearer_token) (at least 4 characters
            each); the values of the other headers are shown where they appear (a tenant C(prod) does not mask the
            C(prod) of a namespace C(shop-prod)).
        type: dict
      secret_headers:
        description:
          - Names of O(provider.headers) whose values are credentials (for example C(X-Api-Key)), masked wherever
            they appear in the output. C(Authorization) and C(Proxy-Authorization) always are.
          - Each name must be one of O(provider.headers); case does not matter.
        type: list
        elements: str
        default: []
      ca_file:
        description: PEM bundle of the CA that signed Prometheus' certificate. Default the system CAs.
        type: path
      insecure_skip_tls_verify:
        description: Do not verify Prometheus' certificate. Every run warns. For development only.
        type: bool
        default: false
      timeout:
        description: How long one request may take, for example C(30s).
        type: str
        default: 30s
  checks:
    description: The checks. Every check needs a condition, O(checks[].min), O(checks[].max) or
      O(checks[].baseline) (all that are given must hold).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Name of the check, unique; used in reasons and the role's summary.
        type: str
        required: true
      query:
        description: PromQL instant query, templated (see the description).
        type: str
        required: true
      min:
        description: The value must be at least this.
        type: float
      max:
        description: The value must be at most this.
        type: float
      baseline:
        description:
          - The relative condition, against the stable slot. The value must be at most
            C(stable * max_factor + max_offset) and at least C(stable * min_factor + min_offset).
          - When the stable side has no data the condition has no reference, and O(checks[].on_no_data) decides.
        type: dict
        suboptions:
          query:
            description: The stable side's query. Default O(checks[].query), rendered with C(${slot}) and
              C(${service}) of the stable slot.
            type: str
          max_factor:
            description: Factor of the upper bound.
            type: float
          max_offset:
            description: Offset of the upper bound.
            type: float
            default: 0.0
          min_factor:
            description: Factor of the lower bound.
            type: float
          min_offset:
            description: Offset of the lower bound (negative to allow less than C(stable * min_factor)).
            type: float
            default: 0.0
          reducer:
            description: How the stable side's series become one number. Default O(checks[].reducer) when it is
              C(max), C(min), C(avg) or C(sum); otherwise the stable side must return one series.
            type: str
            choices: [max, min, avg, sum]
      reducer:
        description:
          - How several series are judged. C(all) - every series holds; C(any) - at least one holds; C(max),
            C(min), C(avg), C(sum) - that one number holds. Without series there is no data, never a pass.
        type: str
        choices: [all, any, max, min, avg, sum]
        default: all
      interval:
        description: Time between measurements, for example C(1m). Default O(interval).
        type: str
      count:
        description: How many decided measurements make the check's verdict. Default O(count).
        type: int
      initial_delay:
        description: Time from the start of the task to the first measurement.
        type: str
        default: 0s
      failure_limit:
        description: Failed measurements tolerated; one more fails the check.
        type: int
        default: 0
      inconclusive_limit:
        description: Inconclusive measurements tolerated; one more makes the check C(Inconclusive).
        type: int
        default: 0
      consecutive_error_limit:
        description: Consecutive errors tolerated (not counted, measured again); one more makes the check C(Error).
        type: int
        default: 4
      max_measurements:
        description: The most measurements the check may take, errors and retries included. Default
          C(2 * count + consecutive_error_limit). The check is C(Inconclusive) once O(checks[].count) decided
          measurements cannot be reached within it.
        type: int
      on_no_data:
        description:
          - What a measurement without data is (no series, only C(NaN), traffic below the floor, a baseline without
            data). C(fail), C(inconclusive), C(pass), or C(retry) (not counted, measured again at the next
            interval).
        type: str
        choices: [fail, inconclusive, pass, retry]
        default: inconclusive
      traffic_floor:
        description: The least traffic that makes a measurement meaningful; below it the measurement has no data.
        type: dict
        suboptions:
          query:
            description: PromQL query of the candidate's traffic (its series are summed), templated.
            type: str
            required: true
          min:
            description: The least traffic, in the query's unit (for example requests per second).
            type: float
            required: true
      allow_warnings:
        description:
          - Judge answers that carry Prometheus warnings (partial data); by default they are C(Inconclusive).
          - Info annotations (C(PromQL info:), which Prometheus before 2.54 sends among the warnings) are not
            warnings; they are reported in the measurement's C(infos) and never make it C(Inconclusive).
        type: bool
        default: false
      enforce:
        description: With C(false) the check is measured and reported but never decides the verdict.
        type: bool
        default: true
  context:
    description: The release and step the queries are about; the values of the placeholders.
    type: dict
    suboptions:
      namespace:
        description: Namespace of the release (C(${namespace})).
        type: str
      candidate_slot:
        description: Slot of the candidate (C(${candidate_slot}); C(${slot}) of the query).
        type: str
      stable_slot:
        description: Slot in service (C(${stable_slot}); C(${slot}) of the baseline).
        type: str
      candidate_service:
        description: Service of the candidate (C(${candidate_service}); C(${service}) of the query).
        type: str
      stable_service:
        description: Service of the stable slot (C(${stable_service}); C(${service}) of the baseline).
        type: str
      start:
        description: When the step started, in seconds since the epoch or as an ISO 8601 time with a zone
          (C(2026-12-04T10:00:00Z)). Default the start of the task.
        type: raw
  mode:
    description: C(analyze) runs the checks to a verdict; C(preflight) sends every query once and decides nothing.
    type: str
    choices: [analyze, preflight]
    default: analyze
  interval:
    description: Default O(checks[].interval).
    type: str
    default: 1m
  count:
    description: Default O(checks[].count).
    type: int
    default: 5
  min_window:
    description: The shortest C(${window}); no measurement is taken before O(context.start) plus this. At least
      twice the scrape interval, so that C(rate()) has two samples.
    type: str
    default: 1m
  events:
    description:
      - Record the verdict as a Kubernetes Event (C(events.k8s.io/v1), reason C(AnalysisSuccessful),
        C(AnalysisFailed), C(AnalysisInconclusive) or C(AnalysisError)) in the cluster of the connection options,
        with the verdict, and per check its verdict, value, condition and rendered query in the note (masked like the
        result, cut to 1 KiB). See the collection's C(docs/events.md).
      - Needs O(api_server) (the connection options, for example from C(module_defaults) of
        C(group/manent.kubernetes.manent)). Best-effort; a refused write is a warning, never a failure. None in
        check mode or with O(mode=preflight).
    type: dict
    suboptions:
      namespace:
        description: The namespace of the Event, the release's.
        type: str
        required: true
      regarding:
        description: The object the verdict is about, in O(events.namespace); the role names the history record of
          the judged version. Nothing is recorded when its name is empty.
        type: dict
        required: true
        suboptions:
          api_version:
            description: Its apiVersion.
            type: str
            default: v1
          kind:
            description: Its kind.
            type: str
            default: ConfigMap
          name:
            description: Its name.
            type: str
            required: true
  api_server:
    description:
      - The cluster's API server, as a host name/IP or an C(https://) URL; only to record the verdict's Event
        (O(events)). The analysis itself talks to Prometheus only.
    type: str
    required: false
notes:
  - The module runs in the controller process through its action plugin (a local connection), printing a line per
    measurement while it waits; with another connection or C(async) it runs as a module.
seealso:
  - module: manent.kubernetes.manent_traffic
"""

EXAMPLES = r"""
- name: Judge the step that started at step_start (seconds since the epoch)
  manent.kubernetes.manent_analysis:
    provider:
      url: https://prometheus.example:9090
      bearer_token: "{{ prometheus_token }}"
    context:
      namespace: shop-prod
      candidate_slot: b
      stable_slot: a
      candidate_service: shop-b
      stable_service: shop-a
      start: "{{ step_start }}"
    interval: 1m
    count: 5
    checks:
      - name: error-ratio
        query: >-
          (sum(rate(http_requests_total{service="${service}", code=~"5.."}[${window}])) or vector(0))
          / sum(rate(http_requests_total{service="${service}"}[${window}]))
        max: 0.01
        traffic_floor:
          query: sum(rate(http_requests_total{service="${service}"}[${window}]))
          min: 1
        on_no_data: retry
      - name: p99-latency
        query: >-
          histogram_quantile(0.99,
          sum by (le) (rate(http_request_duration_seconds_bucket{service="${service}"}[${window}])))
        max: 0.5
      - name: error-ratio-vs-stable
        query: >-
          (sum(rate(http_requests_total{service="${service}", code=~"5.."}[${window}])) or vector(0))
          / sum(rate(http_requests_total{service="${service}"}[${window}]))
        baseline:
          max_factor: 1.5
          max_offset: 0.001
  register: analysis

- name: Send every query once before the first weight change (fails on a query Prometheus refuses)
  manent.kubernetes.manent_analysis:
    mode: preflight
    provider:
      url: https://prometheus.example:9090
      bearer_token: env:PROMETHEUS_TOKEN
    context:
      candidate_service: shop-b
    checks:
      - name: error-ratio
        query: sum(rate(http_requests_total{service="${service}", code=~"5.."}[${window}]))
        max: 0.01

- name: Step, judge, and abort on anything but Successful
  block:
    - name: Judge the step
      manent.kubernetes.manent_analysis:
        provider:
          url: https://prometheus.example:9090
          ca_file: /etc/ssl/prometheus-ca.pem
          username: manent
          password: "{{ prometheus_password }}"
        context:
          candidate_service: shop-b
          start: "2026-12-04T10:00:00Z"
        checks:
          - name: p99-latency
            query: >-
              histogram_quantile(0.99,
              sum by (le) (rate(http_request_duration_seconds_bucket{service="${service}"}[${window}])))
            max: 0.5
  rescue:
    - name: Say why
      ansible.builtin.debug:
        msg: "{{ ansible_failed_result.verdict | default('no verdict') }}: {{ ansible_failed_result.msg }}"
"""

RETURN = r"""
mode:
  description: The mode run.
  returned: always
  type: str
  sample: analyze
verdict:
  description: C(Successful), C(Failed), C(Inconclusive) or C(Error).
  returned: with O(mode=analyze)
  type: str
  sample: Failed
reason:
  description: One line; the analysis' verdict and the reason of the check that decided it, or the preflight's.
  returned: always
  type: str
  sample: 'check error-ratio Failed: 1 of 3 measurements failed (failure_limit 0); at 2026-12-04T10:03:00.000Z:
    value 0.062 > 0.01 (max)'
measurements:
  description: How many measurements were taken, of all checks.
  returned: with O(mode=analyze)
  type: int
started_at:
  description: When the analysis started (UTC, ISO 8601).
  returned: with O(mode=analyze)
  type: str
finished_at:
  description: When the analysis finished (UTC, ISO 8601).
  returned: with O(mode=analyze)
  type: str
context:
  description: The placeholder values, and C(start) (ISO 8601) and C(start_epoch).
  returned: always
  type: dict
checks:
  description:
    - Per check - C(name), C(enforce), C(verdict), C(reason) (one line), C(stopped) (by another check's verdict),
      C(condition) (as text), C(reducer), C(on_no_data), C(query) (as written), C(counters) (C(measurements),
      C(successful), C(failed), C(inconclusive), C(errors), C(consecutive_errors), C(skipped), C(decided)),
      C(limits), C(measurements) (each C(number), C(time), C(window), C(outcome), C(reason), C(value),
      C(baseline), C(traffic)).
    - Of the last measurement, which decided the check - C(evaluation_time), C(window), C(outcome),
      C(rendered_query), C(result_type), C(values) (each C(labels) and C(value), those breaking the condition
      first, at most 20; C(values_omitted)), C(value), C(warnings), C(infos), C(error), and C(baseline) and
      C(traffic) (C(query), C(values), C(value)).
    - Values are strings as Prometheus writes them (C(0.25), C(NaN), C(+Inf)).
  returned: with O(mode=analyze)
  type: list
  elements: dict
evaluation_time:
  description: The preflight's evaluation time.
  returned: with O(mode=preflight)
  type: str
window:
  description: The preflight's C(${window}).
  returned: with O(mode=preflight)
  type: str
preflight:
  description: Per query - C(check), C(role) (C(query), C(baseline), C(traffic_floor)), C(query) (as sent),
    C(outcome) (C(accepted), C(warning), C(refused), C(not sent)), C(message), C(series), C(result_type).
  returned: with O(mode=preflight)
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import analysis_task


def main():
    module = AnsibleModule(argument_spec=analysis_task.argument_spec(), supports_check_mode=True)
    analysis_task.module_main(module)


if __name__ == "__main__":
    main()
