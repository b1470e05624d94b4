# SPDX-License-Identifier: BSD-3-Clause
# make deb: the Debian package libpam-flowslot, built by dpkg-buildpackage -us -uc -b from a
# copy of the tree's files (all but those git ignores) under build/deb/src, so that neither
# the tree nor its parent directory gets a file; the .deb, its -dbgsym, .buildinfo and .changes
# land in build/deb/.
# make check-deb: tests/e2e/deb.sh builds it, runs lintian, installs it into a throwaway root and
# logs in through the installed module.

DEB_OUT = build/deb
DEB_SRC = $(DEB_OUT)/src/pam-flowslot-$(VERSION)

.PHONY: deb check-deb

deb:
	@sh tests/deps.sh deb
	rm -rf $(DEB_OUT)
	mkdir -p $(DEB_SRC)
	if git rev-parse --git-dir > /dev/null 2>&1; then \
		git ls-files -z --cached --others --exclude-standard | \
			tar -c --null -T - --ignore-failed-read 2> /dev/null | tar -x -C $(DEB_SRC); \
	else \
		tar -c --exclude=./build --exclude=./pam_flowslot.so . | tar -x -C $(DEB_SRC); \
	fi
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b
	mv $(DEB_OUT)/src/*.deb $(DEB_OUT)/src/*.buildinfo $(DEB_OUT)/src/*.changes $(DEB_OUT)/
	rm -rf $(DEB_OUT)/src
	@ls $(DEB_OUT)

check-deb: build/pam_stamp.so
	$(SUITE) bash tests/e2e/deb.sh

# About 36 s on two shared cores (the build 8 s, lintian 4 s, the walk in an overlay root the
# rest, 7 s of it a login waiting its turn): part of make check.
