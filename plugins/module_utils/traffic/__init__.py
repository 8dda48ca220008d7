# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Traffic rollouts between slots a and b: the route weights (Gateway API, Istio) and the operations step,
promote, abort, retire, rollback and status. Slot naming lives in rules/slots.py, since rendering and the engine
read it too.

May import: base, cluster, rules, history, engine."""
