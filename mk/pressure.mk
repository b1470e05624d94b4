# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/pressure.sh: the pressure hold (pressure=) on fake PSI files and on /proc/pressure.
.PHONY: check-pressure
CHECK_EXTRA += check-pressure

check-pressure: pam_flowslot.so
	$(SUITE) bash tests/suites/pressure.sh
