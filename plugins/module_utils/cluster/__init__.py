# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one cluster serves and holds, read once per run: discovery of kinds and versions (cached), the field
schemas it publishes, live objects (GETs and paged LISTs, or followed by LIST + WATCH for the waits: watch.py), and
whether this identity may write (access reviews).

May import: base."""
