# SPDX-License-Identifier: BSD-3-Clause
# tests/tls.sh: Redis across an untrusted network through a stunnel4 client. Part of
# "make check"; alone with "make check-tls".
.PHONY: check-tls
CHECK_EXTRA += check-tls

check-tls: pam_flowslot.so
	bash tests/tls.sh
