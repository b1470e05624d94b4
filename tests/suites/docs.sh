#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The man page, the README and the examples against the code; make install into a DESTDIR.
set -u
. "$(dirname "$0")/../helpers/lib.sh"
same_when_sanitized "the docs check (man pages, README, the tool's tables)"

cd "$TOP" || exit 1

# RETURN VALUES lists exactly the codes the entry points can return.
documented=$(sed -n '/^\.SH "*RETURN VALUES"*/,/^\.SH/p' man/pam_flowslot.8 |
	sed -nE 's/^\.B (PAM_[A-Z_]+).*/\1/p' | sort -u | tr '\n' ' ')
returned=$(sed -n '/^static int gate_denial/,$p' pam_flowslot.c |
	grep -oE '(\] = |return |ret = )PAM_[A-Z_]+' | grep -oE 'PAM_[A-Z_]+' | sort -u | tr '\n' ' ')
check "man page RETURN VALUES match the code ($documented)" [ "$documented" = "$returned" ]

# Every option the parser knows is documented in the man page, and no more; the README names
# only options the parser knows.
code_opts=$( (sed -nE 's/^\s*\{ "([a-z_]+)=", opt_set_.*/\1/p' src/opt.c
	grep -oE 'strcmp\(arg, "[a-z_]+"\)' src/opt.c | sed -E 's/.*"(.*)".*/\1/') | sort | tr '\n' ' ')
man_opts=$(sed -n '/^\.SH "*OPTIONS"*/,/^\.SH/p' man/pam_flowslot.8 |
	sed -nE '/^\.TP/{n; s/^(\.BI? |\\fB)([a-z_]+)(=| |$|\\fR).*/\2/p}' | sort -u | tr '\n' ' ')
readme_opts=$(sed -nE 's/^- \*\*`([a-z_]+)=?`\*\*.*/\1/p' README.md | sort -u | tr '\n' ' ')
check "man page OPTIONS match the parser ($man_opts)" [ "$man_opts" = "$code_opts" ]
unknown=$(for opt in $readme_opts; do case " $code_opts" in *" $opt "*) ;; *) echo "$opt" ;; esac; done)
check "README's option guidance names only options the parser knows ($readme_opts)" \
	[ -n "$readme_opts" -a -z "$unknown" ]

# The README stays short enough to read in minutes, and every file it links to exists.
check "README.md is at most 12 KB ($(wc -c < README.md) bytes)" [ "$(wc -c < README.md)" -le 12288 ]
missing=$(grep -oE '\]\([^)#]+\)' README.md HACKING.md | sed -E 's/.*\]\(([^)]*)\)/\1/' | sort -u |
	while read -r f; do [ -e "$f" ] || echo "$f"; done)
check "README.md and HACKING.md link only to files in the tree${missing:+ (missing: $missing)}" [ -z "$missing" ]

conf_opts=$(sed -nE 's/^#([a-z_]+)(=.*)?$/\1/p' etc/security/pam_flowslot.conf | sort -u | tr '\n' ' ')
check "etc/security/pam_flowslot.conf lists every option but conf ($conf_opts)" \
	[ "$conf_opts" = "$(echo "$code_opts" | tr ' ' '\n' | grep -vx conf | grep . | tr '\n' ' ')" ]

# pam_flowslot.conf(5) does not repeat the option list: its OPTIONS point at pam_flowslot(8)'s,
# and its OPTIONS and EXAMPLES name only options the parser knows.
conf5=$(sed -n '/^\.SH OPTIONS/,/^\.SH "*SEE ALSO/p' man/pam_flowslot.conf.5)
conf5_opts=$( (grep -oE '\\fB[a-z_]+=' <<< "$conf5" | sed -E 's/^\\fB//; s/=$//'
	sed -nE 's/^\.BI? ([a-z_]+)=.*/\1/p' <<< "$conf5"
	sed -n '/^\.EX/,/^\.EE/p' <<< "$conf5" | sed -nE 's/^([a-z_]+)=.*/\1/p') | sort -u | tr '\n' ' ')
unknown=$(for opt in $conf5_opts; do case " $code_opts" in *" $opt "*) ;; *) echo "$opt" ;; esac; done)
check "pam_flowslot.conf(5) names only options the parser knows ($conf5_opts)${unknown:+; not: $unknown}" \
	[ -n "$conf5_opts" -a -z "$unknown" ]
conf5_list=$(sed -n '/^\.SH OPTIONS/,/^\.SH/p' man/pam_flowslot.conf.5 | grep -c '^\.TP')
check "pam_flowslot.conf(5) OPTIONS point at pam_flowslot(8) rather than list the options ($conf5_list entries)" \
	sh -c '[ "$1" = 0 ] && sed -n "/^\.SH OPTIONS/,/^\.SH/p" man/pam_flowslot.conf.5 | tr "\n" " " |
		grep -q "OPTIONS of \.BR pam_flowslot (8)"' sh "$conf5_list"

# flowslotctl(8) lists exactly the commands of the tool's table.
ctl_code=$(sed -nE 's/^\s*\{ "([a-z]+)", ctl_[a-z_]+, ".*/\1/p' flowslotctl.c | sort | tr '\n' ' ')
ctl_man=$(sed -n '/^\.SH COMMANDS/,/^\.SH/p' man/flowslotctl.8 |
	sed -nE '/^\.TP/{n; s/^\.BR? ([a-z]+)( .*)?$/\1/p}' | sort | tr '\n' ' ')
check "flowslotctl.8 COMMANDS match the tool's table ($ctl_man)" [ -n "$ctl_code" -a "$ctl_man" = "$ctl_code" ]

# The man pages render without a warning.
for page in pam_flowslot.8 pam_flowslot.7 pam_flowslot.conf.5 flowslotctl.8; do
	warnings=$(LC_ALL=C.UTF-8 groff -man -ww -z "man/$page" 2>&1)
	check "groff -ww renders $page without warnings" [ -z "$warnings" ]
	# As man shows it in a terminal of 80 to 120 columns: man-db sets the line length to 78n
	# at 80 columns, 117n at 120 (the smaller of width - 2 and 39/40 of it). Every length
	# from 78n to 120n, so that no width in between says "can't break line".
	warned=""
	for ll in $(seq 78 120); do
		[ -z "$(LC_ALL=C.UTF-8 groff -k -man -Tutf8 -ww -z -rLL="${ll}n" -rLT="${ll}n" "man/$page" 2>&1)" ] ||
			warned="$warned ${ll}n"
	done
	check "$page renders without warnings at line lengths 78n to 120n (80 to 120 columns)${warned:+; warned at$warned}" \
		[ -z "$warned" ]
done

# The README's example stack is the file in etc/ (but for its SPDX line).
example=$(grep -v SPDX-License-Identifier etc/pam.d/flowslot-example | grep -c -F -x -f README.md)
check "README shows etc/pam.d/flowslot-example line for line" \
	[ "$example" -eq "$(grep -vc SPDX-License-Identifier etc/pam.d/flowslot-example)" ]

# The SYNOPSIS names every option the parser knows, and no more.
syn_opts=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' man/pam_flowslot.8 | grep -oE '\[\\fB[a-z_]+' |
	sed 's/.*fB//' | sort -u | tr '\n' ' ')
check "man page SYNOPSIS matches the parser ($syn_opts)" [ "$syn_opts" = "$code_opts" ]

# The man page as a terminal shows it, in ASCII, for the checks on what it says.
LC_ALL=C groff -man -Tascii -P-cbou man/pam_flowslot.8 2> /dev/null > "$TMP/page.txt"

# Every via= the module sets is explained; every line it logs of a login is quoted, in its shape
# (tests/docs/loglines.py), and no line is quoted that it does not log.
vias=$(grep -oE 'via = "[a-z-]+"' pam_flowslot.c | sed -E 's/.*"(.*)"/\1/' | sort -u | tr '\n' ' ')
unexplained=$(for v in $vias; do grep -qE "(^| )$v( |,|\)|$)" "$TMP/page.txt" || echo "$v"; done)
check "man page explains every via= ($vias)" [ -n "$vias" -a -z "$unexplained" ]
/usr/bin/python3 tests/docs/loglines.py pam_flowslot.c | sort -u > "$TMP/lines.code"
sed -nE 's/^ *([a-z_]+: \.\.\. .*[^ ]) *$/\1/p' "$TMP/page.txt" | sort -u > "$TMP/lines.man"
check "man page quotes the $(wc -l < "$TMP/lines.code") log lines of a login as the module writes them$(diff "$TMP/lines.code" "$TMP/lines.man" | sed -nE 's/^([<>]) /; \1 /p' | tr -d '\n' | sed 's/; </; in the code only:/g; s/; >/; in the page only:/g')" \
	[ -s "$TMP/lines.code" -a "$(cat "$TMP/lines.code")" = "$(cat "$TMP/lines.man")" ]

# flowslotctl's --help and its man page name every long option of its getopt table.
ctl_long=$(sed -n '/^static const struct option ctl_options/,/^};/p' flowslotctl.c |
	grep -oE '\{ "[a-z-]+"' | sed -E 's/.*"(.*)"/\1/' | sort | tr '\n' ' ')
./flowslotctl --help > "$TMP/ctl.help" 2>&1
LC_ALL=C groff -man -Tascii -P-cbou man/flowslotctl.8 2> /dev/null > "$TMP/ctl.txt"
unhelped=$(for o in $ctl_long; do grep -q -- "--$o" "$TMP/ctl.help" || echo "$o"; done | tr '\n' ' ')
unmanned=$(for o in $ctl_long; do grep -q -- "--$o" "$TMP/ctl.txt" || echo "$o"; done | tr '\n' ' ')
check "flowslotctl --help names every long option ($ctl_long)${unhelped:+; not: $unhelped}" \
	[ -n "$ctl_long" -a -z "$unhelped" ]
check "flowslotctl(8) names every long option${unmanned:+; not: $unmanned}" [ -z "$unmanned" ]

# tests/README.md, the index of the man pages' promises: every test a row names is in its file
# (a shell check's description on its check line, or a helper's quoted argument; a unit test's
# function; a Python def or class; a property's row of docs/MODEL.md), every row names one,
# every row's place (its section, and its tag) is in its page, and every tag of "The queue's
# promises" in pam_flowslot(7) has a row.
index_unfound() {
	grep -E '^\| ' tests/README.md | grep -vE '^\| [^|]* \| checked by \|$' | while IFS= read -r row; do
		cells=$(printf '%s\n' "$row" | sed -E 's/.* \| (.*) \|$/\1/' | grep -oE '`[^`]+`: "[^"]+"')
		[ -n "$cells" ] || { echo "a row naming no test: ${row:0:60}..."; continue; }
		printf '%s\n' "$cells" | while IFS= read -r cell; do
			file=${cell#\`} file=${file%%\`*} name=${cell#*\`: \"} name=${name%\"}
			case $file in
			tests/*.sh) grep -F -- "$name" "$file" 2> /dev/null | grep -qF -e 'check "' -e "\"$name" ;;
			tests/*.c) grep -qF -- "void $name(" "$file" 2> /dev/null ;;
			tests/*.py) grep -F -- "$name" "$file" 2> /dev/null | grep -qE '^[[:space:]]*(def|class) ' ;;
			docs/MODEL.md) grep -qF -- "| $name |" "$file" ;;
			*) false ;;
			esac || echo "$file: \"$name\""
		done
	done
}
index_rows=$(grep -E '^\| ' tests/README.md | grep -vE '^\| [^|]* \| checked by \|$' | grep -c .)
unfound=$(index_unfound)
check "tests/README.md: every test its $index_rows rows name exists${unfound:+; not found: $(echo "$unfound" | paste -sd ' ')}" \
	[ "$index_rows" -gt 0 -a -z "$unfound" ]
misplaced=$(/usr/bin/python3 tests/docs/places.py tests/README.md) || misplaced="$misplaced tests/docs/places.py failed"
check "tests/README.md: every row's section and tag stand in its page ($index_rows rows, and the unchecked promises)${misplaced:+; not found: $(echo "$misplaced" | paste -sd ';')}" \
	[ -z "$misplaced" ]
promise_tags=$(sed -n "/^\.SS \"The queue's promises\"/,/^\.S[SH]/p" man/pam_flowslot.7 |
	sed -n '/^\.TP/{n; s/^\.B //p}' | sed 's/\\-/-/g')
unindexed=$(printf '%s\n' "$promise_tags" | while IFS= read -r tag; do
	grep -qF -e "| The queue's promises, $tag | " -e "| The queue's promises, $tag: " tests/README.md || echo "$tag"
done | paste -sd ';')
check "tests/README.md has a row for each of the $(printf '%s\n' "$promise_tags" | grep -c .) tags of \"The queue's promises\"${unindexed:+; none for: $unindexed}" \
	[ -n "$promise_tags" -a -z "$unindexed" ]

# Every paragraph of the pages and the README closes the parentheses it opens.
for page in pam_flowslot.8 pam_flowslot.7 pam_flowslot.conf.5 flowslotctl.8; do
	open=$(LC_ALL=C groff -man -Tascii -P-cbou "man/$page" 2> /dev/null | /usr/bin/python3 tests/docs/parens.py)
	check "$page: every paragraph's parentheses balance${open:+ (not: $open)}" [ -z "$open" ]
done
open=$(cat README.md HACKING.md docs/MODEL.md docs/GUIDE.md | /usr/bin/python3 tests/docs/parens.py)
check "README.md, HACKING.md, docs/MODEL.md, docs/GUIDE.md: every paragraph's parentheses balance${open:+ (not: $open)}" \
	[ -z "$open" ]

# The shipped examples and the docs show the module's line as the stacks do: no "requisite"
# (a login fails with "Module is unknown" once the package is gone), and one name for the
# password file.
shown="etc README.md HACKING.md man debian"
requisite=$(grep -rnE 'requisite +pam_flowslot' $shown | cut -d: -f1,2 | tr '\n' ' ')
check "no example puts pam_flowslot.so under requisite${requisite:+ (at: $requisite)}" [ -z "$requisite" ]
# Settings live in one place, the configuration file (issue 28): no module line that the
# examples, the profile or the docs show carries an option, commented-out ones included,
# which an administrator would uncomment as they are. Only a front end's own limits may stand
# on its line (issue 39): max_wait= and refusal= hold that login alone, not the schedule.
optioned=$(grep -rnE 'pam_flowslot\.so +([a-z_]+=|(quiet|debug|dry_run)([[:space:]]|$))' $shown |
	grep -vE 'pam_flowslot\.so( (max_wait|refusal)=[^ ]+)+[[:space:]]*$' | cut -d: -f1,2 | tr '\n' ' ')
check "no module line in the examples, the profile or the docs carries an option${optioned:+ (at: $optioned)}" \
	[ -z "$optioned" ]
say=$(grep -lF 'pam_flowslot.conf' etc/pam.d/* | wc -l)
check "each example stack says its settings live in the configuration file ($say of $(ls etc/pam.d | wc -l))" \
	[ "$say" = "$(ls etc/pam.d | wc -l)" ]
# Every shipped stack exempts the same callers as the pam-auth-update profile: the same
# pam_succeed_if tests, with the same jumps, in the same order (issue 28). The profile's line
# that skips services (greeters', Cockpit's) is its own.
exempt_of() {
	grep -v '^#' "$1" | grep 'pam_succeed_if' | grep -v ' service in ' | tr -s ' \t' ' ' |
		sed -E 's/^.*\[(success=[0-9]+) default=ignore\] pam_succeed_if\.so (.*)$/\1 \2/' | paste -sd ';'
}
profile_exempt=$(exempt_of etc/pam-configs/flowslot)
unlike=$(for f in etc/pam.d/*; do [ "$(exempt_of "$f")" = "$profile_exempt" ] || echo "$f"; done | tr '\n' ' ')
check "every shipped stack exempts the profile's callers ($profile_exempt)${unlike:+; not: $unlike}" \
	[ -n "$profile_exempt" -a -z "$unlike" ]
secrets=$(grep -rhoE '/etc/[a-z/]*[A-Za-z_.-]*\.secret' $shown | sort -u | tr '\n' ' ')
check "one password file name in the examples and docs ($secrets)" \
	[ "$secrets" = "/etc/security/pam_flowslot.secret " ]

# The example configuration writes each URL form as the man page does.
forms=$(grep -oE '^#.*' etc/security/pam_flowslot.conf |
	grep -oE '(redis|unix|redis-sentinel|redis-cluster)://[^ ]*' | sed 's/[,.]$//' | grep -F '[' | sort -u)
sed -E 's/\\f[BIRP]//g; s/\\-/-/g; s/\\://g' man/pam_flowslot.8 > "$TMP/page.plain"
unlike=$(for f in $forms; do grep -qF -- "$f" "$TMP/page.plain" || echo "$f"; done | tr '\n' ' ')
check "etc/security/pam_flowslot.conf writes the URL forms as pam_flowslot(8) does ($(echo $forms | wc -w) forms)${unlike:+; not: $unlike}" \
	[ -n "$forms" -a -z "$unlike" ]

# A word that counts the README's commands counts them right ("Both" after two).
commands=$(sed -n '/^## Try it/,/^## /p' README.md | sed -n '/^```sh/,/^```$/p' | grep -c '^make ')
count_word=$(sed -n '/^## Try it/,/^## /p' README.md | sed -n '/^```$/,$p' | grep -oE '^(Both|All three|All four|Each|All)' | head -1)
case "$commands:$count_word" in
2:Both | 3:"All three" | 4:"All four" | *:Each | *:All | *:) counted=yes ;;
*) counted=no ;;
esac
check "the README's word for its $commands commands counts them (\"$count_word\")" [ "$counted" = yes ]

# No merge left its conflict markers in a tracked text file.
if git -C "$TOP" rev-parse --git-dir > /dev/null 2>&1; then
	marked=$(git -C "$TOP" grep -lIE '^(<<<<<<<|>>>>>>>) ' 2> /dev/null | tr '\n' ' ')
	check "no merge conflict markers in the tree${marked:+ (in: $marked)}" [ -z "$marked" ]
fi

# Every tracked source file names its licence in an SPDX line near its top, in its own
# comment syntax: C and headers, shell, Lua, Python, make, the linker map, valgrind
# suppressions, the man pages, the example configuration, CI and debian/rules. (Not the
# pam-auth-update profile, whose format has no comments, nor data: fuzz corpora, figures.)
if git -C "$TOP" rev-parse --git-dir > /dev/null 2>&1; then
	unlicensed=$(git -C "$TOP" ls-files '*.c' '*.h' '*.sh' '*.lua' '*.py' '*.mk' '*.map' \
		'*.supp' Makefile '*.8' '*.5' '.ci/*' .clang-format 'etc/pam.d/*' 'etc/security/*' \
		'etc/stunnel/*' debian/rules 'debian/*.prerm' |
		while read -r f; do
			head -3 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause' || echo "$f"
		done | tr '\n' ' ')
	check "every source file has an SPDX-License-Identifier line${unlicensed:+; not: $unlicensed}" \
		[ -z "$unlicensed" ]
else
	echo "# skipped: the SPDX lines (not a git checkout)"
fi

# One version: the Makefile's, NEWS's newest entry, debian/changelog's, and the module's debug
# trace.
version=$(sed -nE 's/^VERSION = ([0-9][^ ]*)$/\1/p' Makefile)
news=$(sed -nE 's/^pam_flowslot ([0-9][^ ]*) .*/\1/p' NEWS | head -1)
check "NEWS's newest entry is the Makefile's version ($version, NEWS $news)" \
	[ -n "$version" -a "$news" = "$version" ]
changelog=$(sed -nE '1s/^[a-z0-9.+-]+ \(([^)]+)\).*/\1/p' debian/changelog)
check "debian/changelog's newest entry is the Makefile's version (changelog $changelog)" \
	[ "$changelog" = "$version" ]
service version "auth required @M url=local state_dir=$TMP/vstate debug" \
	"auth required @P/pam_permit.so"
login v1 version u1
check "the debug trace names the version ($(grep -o 'version [^ ]*: auth' "$TMP/v1.err"))" \
	grep -qF "version $version: auth" "$TMP/v1.err"

# make install honours DESTDIR and PAMDIR, with the modes a distribution expects.
dest="$TMP/dest dir" # a DESTDIR with a space, as a package built under such a checkout has
make -s install DESTDIR="$dest" PAMDIR=/lib/security > /dev/null
check "make install puts the module in PAMDIR, mode 0644" \
	[ "$(stat -c %a "$dest/lib/security/pam_flowslot.so" 2> /dev/null)" = 644 ]
check "make install puts the man pages in man8, man7 and man5" \
	test -f "$dest/usr/share/man/man8/pam_flowslot.8" -a -f "$dest/usr/share/man/man5/pam_flowslot.conf.5" \
	-a -f "$dest/usr/share/man/man8/flowslotctl.8" -a -f "$dest/usr/share/man/man7/pam_flowslot.7"
check "make install puts flowslotctl in SBINDIR, mode 0755" \
	[ "$(stat -c %a "$dest/usr/sbin/flowslotctl" 2> /dev/null)" = 755 ]
modes=$(find "$dest" -type f ! -path '*/sbin/*' -printf '%m\n' | sort -u | tr '\n' ' ')
check "make install: every other file mode 0644 ($modes)" [ "$modes" = "644 " ]
check "make install: the pam-auth-update profile" [ -f "$dest/usr/share/pam-configs/flowslot" ]
check "make install writes nothing outside DESTDIR (all $(find "$dest" -type f | wc -l) files in it)" \
	[ "$(find "$dest" -type f | wc -l)" -eq 21 ]
make -s uninstall DESTDIR="$dest" PAMDIR=/lib/security > /dev/null
check "make uninstall removes every file it installed" [ "$(find "$dest" -type f | wc -l)" -eq 0 ]

# tests/deps.sh: make demo installs what the demo needs (the build, pamtester, pam_wrapper, a
# redis-server), none of the suites' toolchain, no Sentinel, all of it part of what make check
# installs; each names only what is missing, and nothing when all is there. A fake dpkg-query
# stands for the host's: installed, but for the names in FAKE_MISSING ("all": none is).
mkdir -p "$TMP/fakedpkg"
cat > "$TMP/fakedpkg/dpkg-query" <<'FAKE'
#!/bin/sh
for p; do :; done
case " $FAKE_MISSING " in " all " | *" $p "*) exit 1 ;; esac
printf 'install ok installed'
FAKE
chmod 0755 "$TMP/fakedpkg/dpkg-query"
needs() { PATH="$TMP/fakedpkg:$PATH" FAKE_MISSING=$1 sh tests/deps.sh -n "$2"; }
demo_needs=$(needs all demo)
check_needs=$(needs all deb) # make check: tests/deps.sh deb
extra=$(for p in clang valgrind redis-sentinel stunnel4 gnuplot-nox openssh-server libcmocka-dev; do
	case " $demo_needs " in *" $p "*) echo "$p" ;; esac; done | tr '\n' ' ')
check "deps.sh demo: $(echo "$demo_needs" | wc -w) packages, the build, pamtester, pam_wrapper, redis-server${extra:+; not: $extra}" \
	sh -c 'for p in gcc libpam0g-dev libhiredis-dev libssl-dev liblua5.1-0-dev pamtester libpam-wrapper redis-server; do
		case " $1 " in *" $p "*) ;; *) exit 1 ;; esac; done; [ -z "$2" ]' sh "$demo_needs" "$extra"
outside=$(for p in $demo_needs; do case " $check_needs " in *" $p "*) ;; *) echo "$p" ;; esac; done | tr '\n' ' ')
check "deps.sh: make check installs all make demo does ($(echo "$check_needs" | wc -w) packages)${outside:+; not: $outside}" \
	[ -z "$outside" ]
check "deps.sh names what is missing, and nothing when all is there" \
	sh -c '[ -z "$1$2" ] && [ "$3" = redis-server ] && [ "$4" = "redis-server clang" ]' sh \
	"$(needs '' demo)" "$(needs '' check)" "$(needs 'redis-server clang' demo)" \
	"$(needs 'redis-server clang' check)"

# The README's "make demo" works from any checkout: here from a copy of the built tree under
# /tmp (which each login gets a private one of) by a path with a space, quotes, a dollar sign
# and sed's | and &.
copy=$(mktemp -d "/tmp/flowslot docs 'q' \"\$x|&.XXXXXX")
trap 'rm -rf "$copy"; cleanup' EXIT
cp --parents pam_flowslot.so tests/helpers/lib.sh tests/helpers/untouched.sh tests/demo.sh tests/helpers/stamp.sh \
	etc/pam.d/sshd-flowslot "$copy/"
bash "$copy/tests/demo.sh" > "$TMP/demo.log" 2>&1
demo_rc=$?
check "make demo from a checkout at '$copy': $(grep -o '^[0-9]* logins, [0-9]* failed' "$TMP/demo.log")" \
	sh -c '[ "$1" = 0 ] && grep -q "^6 logins, 0 failed" "$2"' sh "$demo_rc" "$TMP/demo.log"
rm -rf "$copy"
# Its stack is the README's for sshd: the session line of etc/pam.d/sshd-flowslot, bracket and
# all.
bracket=$(sed -nE 's/^session +(\[[^]]*\]) +pam_flowslot\.so.*/\1/p' etc/pam.d/sshd-flowslot)
check "make demo's stack is the session line of etc/pam.d/sshd-flowslot ($bracket)" \
	grep -qF "    session $bracket pam_flowslot.so " "$TMP/demo.log"
# Each line it shows tells the place P and the wait N of one answer: on its schedule of 1 s
# with no login lost, the logins ahead go in 1 s apart, the first within a second, so
# P - 1 <= N <= P (N is rounded to a tenth: a line told late on a loaded machine said
# "number 1, 0 s"). A place from one renewal with the wait left after a later one ("you are
# now number 3; your turn in about 1 s") is not.
told=$(grep -o 'Login queue: .*your turn in about [0-9.]* s\.' "$TMP/demo.log")
untrue=$(printf '%s\n' "$told" | sed -nE 's/.*you are (now )?next; .* about ([0-9.]+) s\.$/1 \2/p
	s/.*you are (now )?number ([0-9]+); .* about ([0-9.]+) s\.$/\2 \3/p' |
	awk '!($2 >= $1 - 1 && $2 <= $1) { printf "%s(number %s, %s s)", sep, $1, $2; sep = ", " }')
check "make demo: each of its $(printf '%s\n' "$told" | grep -c .) lines with a place tells one answer's place and wait${untrue:+; not: $untrue}" \
	[ "$(printf '%s\n' "$told" | grep -c .)" -ge 5 -a -z "$untrue" ]

finish
