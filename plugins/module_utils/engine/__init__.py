# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deploying a bundle to a cluster: plan, owners and access checks, dry run, server-side apply by tier, lifecycle
stages, the rollout wait, prune, delete, change sets and diffs, and rollback of a release key.

May import: base, cluster, rules, render (the bundle), history."""
