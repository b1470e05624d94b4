# SPDX-License-Identifier: BSD-3-Clause
# The fault campaign's one-host faults (tests/campaign/CONTRACT.md): Redis stopped and
# restarted, its clock stepped, waiters killed, stopped and hung up, state_dir full and
# unwritable. Sourced by run.sh after tests/campaign/lib.sh.
# shellcheck shell=bash

# ---- none: the baseline ---------------------------------------------------------------------
# No fault: what the properties look like on this machine now, and the epsilon of P1 and P3.
campaign_fault none "no fault: the baseline, epsilon measured here"
fault_none_setup() { campaign_redis none; }
fault_none_inject() { :; }
fault_none_heal() { :; }
fault_none_teardown() { stop_redis none; }
fault_none_bounds() { :; }
