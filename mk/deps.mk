# SPDX-License-Identifier: BSD-3-Clause
# tests/deps-root.sh: tests/deps.sh installing for real in a throwaway root, starting nothing.
.PHONY: check-deps
CHECK_EXTRA += check-deps

check-deps:
	$(SUITE) bash tests/deps-root.sh
