# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Add what antsibull-docs does not generate to the docs site sources (hack/docs-site.sh runs it).

    python hack/docs_site.py <site sources: conf.py and rst/ from antsibull-docs> <repository root>

- README.md and docs/*.md (with their images) under rst/project/, read by myst-parser; their links to files
  outside the site point to the repository (galaxy.yml's `repository`).
- a "Project documentation" table of contents at the end of the collection index (rst/index.rst), the release
  notes first (rst/changelog.rst, which docs-site.sh renders from changelogs/changelog.yaml).
- a local intersphinx inventory of the few docs.ansible.com labels and configuration environment variables the
  generated pages reference, so the build needs no network and those links still lead to docs.ansible.com.
"""

import os
import posixpath
import re
import shutil
import sys
import zlib

import yaml

ANSIBLE_DOCS = 'https://docs.ansible.com/projects/ansible/devel/'
# label -> (page#anchor on ANSIBLE_DOCS, title): the references antsibull-docs writes into module and
# collection pages. A new "undefined label" warning of sphinx-build names one to add here.
ANSIBLE_LABELS = {
    'action_plugins': ('plugins/action.html#action-plugins', 'Action plugins'),
    'common_return_values': ('reference_appendices/common_return_values.html#common-return-values', 'Return Values'),
    'ansible_configuration_settings': ('reference_appendices/config.html#ansible-configuration-settings',
                                       'Ansible Configuration Settings'),
}
# ansible-core's configuration environment variables that generated pages reference (the inventory plugin's cache
# options, from ansible.builtin.inventory_cache): on ANSIBLE_DOCS's configuration page.
ANSIBLE_ENVVARS = ('ANSIBLE_CACHE_PLUGIN', 'ANSIBLE_CACHE_PLUGIN_CONNECTION', 'ANSIBLE_CACHE_PLUGIN_PREFIX',
                   'ANSIBLE_CACHE_PLUGIN_TIMEOUT')
INVENTORY = 'ansible_devel.inv'
PROJECT_DIR = 'project'
RELEASE_NOTES = 'changelog.rst'  # hack/docs-site.sh: CHANGELOG_PAGE
LINK = re.compile(r'(\]\()([^)\s]+)(\))')

CONF = '''

# --- added by hack/docs_site.py: offline references, the project's Markdown docs ---
intersphinx_mapping = {{'ansible_devel': ({docs!r}, {inventory!r})}}
extensions.append('myst_parser')
myst_heading_anchors = 4
source_suffix = {{'.rst': 'restructuredtext', '.md': 'markdown'}}
'''

INDEX = '''

.. _manent_project_docs:

Project documentation
---------------------

The release notes, and the repository's README and docs/ (links to other files of the repository lead to
{repository}).

.. toctree::
    :maxdepth: 1

{entries}
'''


def project_files(root):
    """The Markdown pages and images of the site, as paths relative to the repository root."""
    docs = sorted(name for name in os.listdir(os.path.join(root, 'docs'))
                  if name.endswith(('.md', '.png', '.svg')))
    return ['README.md'] + ['docs/' + name for name in docs]


def rewrite_links(text, source, copied, repository):
    """Point the relative links of `source` (a repository path) at the copies in the site, else at the repository."""
    def replace(match):
        target = match.group(2)
        if re.match(r'^([a-z][a-z0-9+.-]*:|#)', target):
            return match.group(0)
        path, sep, anchor = target.partition('#')
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if resolved in copied:
            new = posixpath.basename(resolved)
        else:
            new = '%s/%s' % (repository.rstrip('/'), resolved)
        return match.group(1) + new + sep + anchor + match.group(3)
    return LINK.sub(replace, text)


def write_inventory(path):
    """A Sphinx (version 2) inventory of ANSIBLE_LABELS and ANSIBLE_ENVVARS."""
    lines = ''.join('%s std:label -1 %s %s\n' % (label, uri, title) for label, (uri, title) in sorted(ANSIBLE_LABELS.items()))
    lines += ''.join('%s std:envvar -1 reference_appendices/config.html#envvar-%s -\n' % (name, name)
                     for name in ANSIBLE_ENVVARS)
    header = ('# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n'
              '# The remainder of this file is compressed using zlib.\n')
    with open(path, 'wb') as handle:
        handle.write(header.encode('utf-8') + zlib.compress(lines.encode('utf-8')))


def prepare(site, root):
    with open(os.path.join(root, 'galaxy.yml'), encoding='utf-8') as handle:
        repository = yaml.safe_load(handle)['repository']
    files = project_files(root)
    copied = set(files)
    target_dir = os.path.join(site, 'rst', PROJECT_DIR)
    os.makedirs(target_dir, exist_ok=True)
    pages = [RELEASE_NOTES[:-4]] if os.path.exists(os.path.join(site, 'rst', RELEASE_NOTES)) else []
    for source in files:
        destination = os.path.join(target_dir, posixpath.basename(source))
        if not source.endswith('.md'):
            shutil.copyfile(os.path.join(root, source), destination)
            continue
        with open(os.path.join(root, source), encoding='utf-8') as handle:
            text = rewrite_links(handle.read(), source, copied, repository)
        with open(destination, 'w', encoding='utf-8') as handle:
            handle.write(text)
        pages.append('%s/%s' % (PROJECT_DIR, posixpath.basename(source)[:-3]))
    with open(os.path.join(site, 'rst', 'index.rst'), 'a', encoding='utf-8') as handle:
        handle.write(INDEX.format(repository=repository, entries='\n'.join('    ' + page for page in pages)))
    write_inventory(os.path.join(site, INVENTORY))
    with open(os.path.join(site, 'conf.py'), 'a', encoding='utf-8') as handle:
        handle.write(CONF.format(docs=ANSIBLE_DOCS, inventory=os.path.join(site, INVENTORY)))


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    prepare(argv[1], argv[2])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
