# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Entry points of the modules and action plugins: argument specs, parameters mapped to the engine's options in
one place, the run of one task and its result. Modules and action plugins call these and nothing deeper.

May import every other package."""
