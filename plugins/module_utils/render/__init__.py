# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""From an artifact to a bundle for one cluster: the artifact file, manifests and variables, Helm charts,
validation against the cluster's discovery and schemas, release labels, order, and the bundle file itself.

May import: base, cluster, rules."""
