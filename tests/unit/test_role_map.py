# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The map of the deploy role cannot drift from the role: docs/role-map.md and the flow of docs/architecture.md are
what hack/role_map.py writes from the YAML, and the parser reads includes (templated and nested), registers,
set_fact and the names of Jinja expressions as Ansible would run them."""

from __future__ import annotations

import importlib.util
import os
import shutil
import textwrap

import pytest

from tests.helpers import ROOT


def _role_map():
    spec = importlib.util.spec_from_file_location("role_map", os.path.join(ROOT, "hack", "role_map.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(name="role_map")
def fixture_role_map():
    return _role_map()


def _read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as handle:
        return handle.read()


def _write(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text).lstrip("\n"))


def test_the_pages_are_what_the_role_says(role_map):
    for path, wanted in role_map.pages().items():
        assert _read(ROOT, path) == wanted, "%s is out of date: run python3 hack/role_map.py" % path


def test_every_phase_and_entry_point_is_on_the_map(role_map):
    page = _read(ROOT, "docs/role-map.md")
    tasks = os.path.join(ROOT, "roles", "deploy", "tasks")
    missing = []
    for folder, _dirs, names in os.walk(tasks):
        for name in names:
            path = os.path.relpath(os.path.join(folder, name), os.path.join(ROOT, "roles", "deploy"))
            if name.endswith(".yml") and "### %s\n" % path not in page:
                missing.append(path)
    assert missing == []
    assert "(missing)" not in page, "an include names a file that does not exist"
    assert "Included by no task file" not in page, "a phase that nothing includes"


# --- the check fails when the role changes and the map does not follow -----------------------------------------

@pytest.fixture(name="copy")
def fixture_copy(tmp_path, role_map, monkeypatch):
    """The role, the playbooks and the two pages in a scratch folder, the map module reading from there."""
    for folder in ("roles", "playbooks"):
        shutil.copytree(os.path.join(ROOT, folder), tmp_path / folder)
    os.makedirs(tmp_path / "docs")
    for page in ("docs/role-map.md", "docs/architecture.md"):
        shutil.copy(os.path.join(ROOT, page), tmp_path / page)
    monkeypatch.setattr(role_map, "ROOT", str(tmp_path))
    assert role_map.main(["--check"]) == 0
    return tmp_path


def _stale(role_map):
    return [path for path, text in role_map.pages().items() if _read(role_map.ROOT, path) != text]


def test_a_new_phase_makes_the_map_stale(copy, role_map):
    _write(copy, {"roles/deploy/tasks/phases/extra.yml": """
        ---
        - name: Extra | Note something
          ansible.builtin.set_fact:
            _deploy_extra: true
        """})
    with open(copy / "roles/deploy/tasks/wave_deploy.yml", "a", encoding="utf-8") as handle:
        handle.write("\n- name: Extra\n  ansible.builtin.import_tasks: phases/extra.yml\n")
    assert _stale(role_map) == ["docs/role-map.md", "docs/architecture.md"]
    assert role_map.main(["--check"]) == 1
    assert role_map.main([]) == 0 and role_map.main(["--check"]) == 0
    assert "`_deploy_extra` (set_fact)" in _read(copy, "docs/role-map.md")


def test_a_renamed_phase_makes_the_map_stale(copy, role_map):
    os.rename(copy / "roles/deploy/tasks/phases/outcome.yml", copy / "roles/deploy/tasks/phases/verdict.yml")
    for folder, _dirs, names in os.walk(copy / "roles/deploy/tasks"):
        for name in names:
            path = os.path.join(folder, name)
            text = _read(copy, path)
            if "outcome.yml" in text:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text.replace("outcome.yml", "verdict.yml"))
    assert _stale(role_map) == ["docs/role-map.md", "docs/architecture.md"]


def test_a_phase_that_produces_another_fact_makes_the_map_stale(copy, role_map):
    path = copy / "roles/deploy/tasks/phases/wave_numbers.yml"
    text = _read(copy, path)
    assert "_deploy_wave_sizes:" in text
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("_deploy_wave_sizes:", "_deploy_wave_lengths:"))
    assert _stale(role_map) == ["docs/role-map.md"]


# --- the parser, on small roles ---------------------------------------------------------------------------------

SAMPLE = {
    "playbooks/run.yml": """
        ---
        # Runs the sample.
        - name: Plan
          hosts: all
          gather_facts: false
          tasks:
            - name: Plan it
              ansible.builtin.import_role:
                name: manent.kubernetes.deploy
                tasks_from: plan

        - name: Waves
          hosts: "manent_deploy_waves"
          serial: "{{ hostvars['localhost']['_deploy_sizes'] }}"
          strategy: linear
          tasks:
            - name: One wave
              ansible.builtin.include_role:
                name: manent.kubernetes.deploy
                tasks_from: wave
        """,
    "playbooks/all.yml": """
        ---
        - name: Everything
          ansible.builtin.import_playbook: run.yml
        """,
    "roles/deploy/defaults/main.yml": """
        ---
        deploy_mode: fast
        deploy_items: []
        """,
    "roles/deploy/vars/main.yml": """
        ---
        _deploy_ok: "{{ __deploy_out.changed | default(false) and _deploy_base }}"
        _deploy_base: "{{ deploy_mode == 'fast' }}"
        _deploy_field: _deploy_noted
        """,
    "roles/deploy/tasks/plan.yml": """
        ---
        # Entry point "plan": the sizes.
        - name: Sizes
          ansible.builtin.set_fact:
            _deploy_sizes: [1]
          delegate_to: localhost
          delegate_facts: true
          run_once: true

        - name: Either
          ansible.builtin.include_tasks: "{{ (deploy_mode == 'fast') | ternary('phases/fast.yml', 'phases/slow.yml') }}"
        """,
    "roles/deploy/tasks/wave.yml": """
        ---
        # Entry point "wave": the work, then the note.
        - name: Work
          block:
            - name: Work | Do
              ansible.builtin.import_tasks: phases/work.yml
              vars:
                __deploy_given: 1
          rescue:
            - name: Work | Failed
              ansible.builtin.set_fact:
                _deploy_failed: "{{ ansible_failed_result.msg }}"
        - name: Each item
          ansible.builtin.include_tasks: phases/item.yml
          loop: "{{ deploy_items }}"
          loop_control:
            loop_var: _deploy_item
        """,
    "roles/deploy/tasks/phases/fast.yml": """
        ---
        # The fast way. Second sentence.
        - name: Fast
          ansible.builtin.debug:
            msg: fast
        """,
    "roles/deploy/tasks/phases/slow.yml": """
        ---
        - name: Slow
          ansible.builtin.debug:
            msg: slow
        """,
    "roles/deploy/tasks/phases/work.yml": """
        ---
        # The work.
        - name: Work | Apply
          manent.kubernetes.manent_apply:
            bundle: "{{ __deploy_given }}"
          register: __deploy_out
          failed_when: __deploy_out.rc | default(0) > 0

        - name: Work | Note
          ansible.builtin.set_fact:
            _deploy_result: "{{ _deploy_ok }}"
            _deploy_noted: "{{ item | default(region) }}"
          when: hostvars['localhost']['_deploy_sizes'] | length > 0

        - name: Work | Nested
          ansible.builtin.import_tasks: note.yml
        """,
    "roles/deploy/tasks/phases/note.yml": """
        ---
        - name: Note | Stats
          ansible.builtin.set_stats:
            data:
              manent_things: "{{ _deploy_result }}"
        - name: Note | Check
          ansible.builtin.assert:
            that:
              - _deploy_result is defined
              - lookup('ansible.builtin.env', 'HOME') | length > 0
        - name: Note | Compare {{ deploy_mode }}
          ansible.builtin.debug:
            msg: "{% for host in ansible_play_hosts %}{{ hostvars[host] | manent.kubernetes.pick(_deploy_field) }}{% endfor %}"
        """,
    "roles/deploy/tasks/phases/item.yml": """
        ---
        - name: Item | Show
          ansible.builtin.debug:
            msg: "{{ _deploy_item }} {{ _deploy_failed | default('') }}"
        """,
}


@pytest.fixture(name="sample")
def fixture_sample(tmp_path, role_map, monkeypatch):
    _write(tmp_path, SAMPLE)
    monkeypatch.setattr(role_map, "ROOT", str(tmp_path))
    return role_map.RoleMap()


def _file(sample, short):
    return sample.files["roles/deploy/tasks/" + short]


def test_a_templated_include_lists_every_file_it_can_be(sample):
    (step,) = [s for s in _file(sample, "plan.yml").steps if s["type"] == "include"]
    assert step["files"] == ["roles/deploy/tasks/phases/fast.yml", "roles/deploy/tasks/phases/slow.yml"]
    assert "ternary" in step["templated"]
    assert sorted(p for p, _step in sample.callers["roles/deploy/tasks/phases/slow.yml"]) == ["roles/deploy/tasks/plan.yml"]


def test_register_set_fact_set_stats_and_delegated_facts_are_produced(sample):
    assert _file(sample, "phases/work.yml").produces == {
        "__deploy_out": ["register"], "_deploy_result": ["set_fact"], "_deploy_noted": ["set_fact"]}
    assert _file(sample, "phases/note.yml").produces == {"manent_things": ["set_stats"]}
    assert _file(sample, "plan.yml").produces == {"_deploy_sizes": ["set_fact on localhost"]}
    assert sample.producers["_deploy_failed"] == [("roles/deploy/tasks/wave.yml", "set_fact")]


def test_reads_are_sorted_by_where_they_come_from(sample):
    work = sample.sorted_reads(_file(sample, "phases/work.yml"))
    # a fact of another file, quoted as hostvars' key; the registered result read by its own task is not listed
    assert work["facts"] == {"_deploy_sizes": ["roles/deploy/tasks/plan.yml"]}
    assert work["given"] == {"__deploy_given": ["roles/deploy/tasks/wave.yml"]}
    # the lazy variable reads __deploy_out, which this file registered before: its own
    assert work["lazy"] == {"_deploy_ok": set()}
    assert work["inventory"] == ["region"]  # item (a loop variable) and ansible_failed_result are Ansible's

    note = sample.sorted_reads(_file(sample, "phases/note.yml"))
    assert note["facts"] == {"_deploy_result": ["roles/deploy/tasks/phases/work.yml"]}  # from set_stats and assert
    assert note["lazy"] == {"_deploy_field": {"_deploy_noted"}}  # a variable holding a fact's name
    assert note["inputs"] == ["deploy_mode"]  # from the task's name; host, the for loop's, is a Jinja local

    item = sample.sorted_reads(_file(sample, "phases/item.yml"))
    assert item["given"] == {"_deploy_item": ["roles/deploy/tasks/wave.yml"]}  # the include's loop variable
    assert item["facts"] == {"_deploy_failed": ["roles/deploy/tasks/wave.yml"]}


def test_a_lazy_variable_reads_facts_through_other_lazy_variables(sample):
    assert sample.lazy_closure("_deploy_ok") == ({"_deploy_base"}, {"__deploy_out"})
    assert sample.lazy_closure("_deploy_base") == (set(), set())


def test_the_flow_follows_plays_into_nested_phases(sample, role_map):
    (playbook,) = [p for p in sample.playbooks if p["path"] == "playbooks/run.yml"]
    flow = role_map.playbook_flow(sample, playbook)
    assert flow[:2] == ["playbooks/run.yml", "  play 1 \"Plan\"   (hosts: all)"]
    text = "\n".join(flow)
    assert "play 2 \"Waves\"   (hosts: manent_deploy_waves, serial: {{ hostvars['localhost']['_deploy_sizes'] }}, " \
           "strategy: linear)" in text
    assert "role manent.kubernetes.deploy, entry point wave (tasks/wave.yml)" in text
    nested = [line.strip() for line in flow if "note.yml" in line or "work.yml" in line or "Note | Stats" in line]
    assert nested == ["import tasks/phases/work.yml   (vars: __deploy_given)", "import tasks/phases/note.yml",
                      "- Note | Stats  [set_stats]"]
    assert [line for line in flow if line.strip().startswith("include tasks/phases/item.yml")] == \
        ["      include tasks/phases/item.yml   (loop {{ deploy_items }} as _deploy_item)"]
    # the imported playbook is named, not repeated; the playbooks with plays of their own come first
    assert [p["path"] for p in sample.playbooks] == ["playbooks/run.yml", "playbooks/all.yml"]
    assert role_map.playbook_flow(sample, sample.playbooks[1]) == ["playbooks/all.yml",
                                                                   "  import_playbook playbooks/run.yml"]


def test_the_short_flow_names_files_with_the_first_sentence_of_their_header(sample, role_map):
    part = role_map.flow_part(sample)
    assert part.startswith(role_map.BEGIN) and part.endswith(role_map.END + "\n")
    assert "tasks/phases/fast.yml" in part and "The fast way." in part and "Second sentence" not in part
    assert "one of (the file name is templated):" in part
    assert "Work | Apply" not in part  # tasks are on the role map only


def test_the_facts_read_by_the_playbooks_are_indexed(sample):
    assert sample.readers()["_deploy_sizes"] == {"playbooks/run.yml": [], "roles/deploy/tasks/phases/work.yml": []}


def test_the_vars_of_a_block_are_given_to_the_files_it_includes(tmp_path, role_map, monkeypatch):
    _write(tmp_path, {
        "playbooks/none.yml": "---\n[]\n",
        "roles/deploy/tasks/main.yml": """
            ---
            - name: Around
              vars:
                __deploy_mode: quick
              block:
                - name: Inside
                  ansible.builtin.import_tasks: phases/inner.yml
            """,
        "roles/deploy/tasks/phases/inner.yml": """
            ---
            - name: Inner
              ansible.builtin.debug:
                msg: "{{ __deploy_mode }}"
            """})
    monkeypatch.setattr(role_map, "ROOT", str(tmp_path))
    sample = role_map.RoleMap()
    assert sample.sorted_reads(_file(sample, "phases/inner.yml"))["given"] == \
        {"__deploy_mode": ["roles/deploy/tasks/main.yml"]}
    assert sample.sorted_reads(_file(sample, "main.yml")) == \
        {"facts": {}, "given": {}, "lazy": {}, "inputs": [], "inventory": []}  # a local of its block


def test_a_template_that_does_not_parse_names_its_file(tmp_path, role_map, monkeypatch):
    _write(tmp_path, {"roles/deploy/tasks/main.yml": """
        ---
        - name: Broken
          ansible.builtin.debug:
            msg: "{{ deploy_mode | }}"
        """})
    monkeypatch.setattr(role_map, "ROOT", str(tmp_path))
    with pytest.raises(ValueError, match="roles/deploy/tasks/main.yml: a template does not parse"):
        role_map.RoleMap()
