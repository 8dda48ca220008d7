# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tables and rules every part reads, each in one file: apply and delete order, readiness of a live object
(kstatus), lifecycle annotations, deprecated and removed API versions and their conversions, slot naming.

Pure functions over objects; no requests. May import: base."""
