# SPDX-License-Identifier: BSD-3-Clause
# Prints the shape of each line the module logs of a login, as pam_flowslot(8) quotes it: the
# format strings of pam_flowslot.c that begin "EVENT: service=%s user=%s rhost=%s", their
# adjacent literals joined, the three who-fields as "...", every other conversion as "...".
import re
import sys

src = open(sys.argv[1]).read()
for call in re.finditer(r"log_msg\([^,]+,\s*LOG_[A-Z]+,\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+)", src):
    fmt = "".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", call.group(1)))
    m = re.match(r"([a-z_]+): service=%s user=%s rhost=%s(.*)$", fmt)
    if m:
        print(m.group(1) + ": ..." + re.sub(r"%l*[sd]", "...", m.group(2)))
