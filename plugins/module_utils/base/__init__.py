# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared base: errors, object and release identity, durations, digests, the connection to an API server
(credentials, kubeconfig contexts and their exec credential plugins, TLS, one HTTP path with the retry policy) and
how many requests go at once.

Imports nothing else of module_utils: every other package builds on it."""
