#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The logon storm's section of BENCHMARKS.md, rendered from the raw results bench/storm.sh
# wrote into RAWDIR/storm/ alone. bench/report.sh calls it with its own picture's PNG and LINK;
# the storm's picture goes next to that one, named storm.png for timeline.png (with gnuplot).
#
#   bench/storm-report.sh RAWDIR [PNG [LINK]]
# shellcheck disable=SC2154 # DONE_*, WORST_*: set by printf -v in the loop
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] && [ $# -le 3 ] || fail "usage: bench/storm-report.sh RAWDIR [PNG [LINK]]"
RAW=$1/storm
[ -f "$RAW/params" ] || fail "$RAW: no raw results of the storm (bench/storm.sh writes them)"
load "$RAW/params"
PNG=${2:+${2%timeline.png}storm.png}
PNG_LINK=${3:-${2:-}}
PNG_LINK=${PNG_LINK:+${PNG_LINK%timeline.png}storm.png}

label() {
	case $1 in
	none) echo "no gate" ;;
	short) echo "fixed interval=$SHORT" ;;
	long) echo "fixed interval=$LONG" ;;
	pressure) echo "pressure=$LIMIT interval=$SHORT" ;;
	esac
}

ROWS=""
for v in $VARIANTS; do
	# Last admitted, all done, worst start-up (s), logins done; peak and mean avg10.
	read -r last all_done worst n_in <<< "$(awk '
		$1 == "admit" { a[$3] = $2; if ($2 > la) la = $2 }
		$1 == "done" { d[$3] = $2; if ($2 > ld) ld = $2 }
		END { for (u in d) { s = d[u] - a[u]; if (s > w) w = s; n++ }
		      printf "%.1f %.1f %.1f %d", la, ld, w, n }' "$RAW/$v.ev")"
	read -r peak mean <<< "$(awk '{ if ($2 > p) p = $2; s += $2; n++ }
		END { printf "%.0f %.0f", p, n ? s / n : 0 }' "$RAW/$v.ps")"
	printf -v "DONE_$v" %s "$all_done"
	printf -v "WORST_$v" %s "$worst"
	ROWS="$ROWS| $(label "$v") | $n_in of $STORM_N | $last | $all_done | $worst | $peak% | $mean% | $(cat "$RAW/$v.held") |
"
done

# The picture: one panel per variant; each login's start-up as a bar from admission to done,
# and cpu "some avg10" on the right axis.
PNG_NOTE="**Not drawn:** gnuplot is not installed (Debian package gnuplot-nox)."
[ -n "$PNG" ] || PNG_NOTE="**Not drawn:** this rendering was asked for no picture."
if [ -n "$PNG" ] && command -v gnuplot > /dev/null; then
	BARS=$(mktemp -d)
	trap 'rm -rf "$BARS"' EXIT
	for v in $VARIANTS; do
		# "row admit_s done_s", ordered by admission
		awk '$1 == "admit" { a[$3] = $2 } $1 == "done" { d[$3] = $2 }
		     END { for (u in a) print u, a[u], d[u] }' "$RAW/$v.ev" | sort -k2,2n |
			awk '{ print NR, $2, $3 }' > "$BARS/$v.bars"
	done
	xmax=$(cat "$BARS"/*.bars | awk '{ if ($3 > m) m = $3 } END { print int(m) + 2 }')
	{
		echo "set terminal pngcairo size 1000,1100 font 'DejaVu Sans,9'"
		echo "set output '$PNG'"
		echo "set termoption noenhanced"
		echo "set multiplot layout 4,1 title '$STORM_N logins at once, each then a start-up of fixed CPU and I/O work'"
		echo "set xrange [0:$xmax]; set yrange [0:$((STORM_N + 1))]; set y2range [0:100]"
		echo "set ytics nomirror; set y2tics 0,25,100; set grid"
		echo "set ylabel 'login (by admission)'; set y2label 'cpu some avg10, %'"
		echo "set key outside right top vertical"
		for v in $VARIANTS; do
			[ "$v" = pressure ] && echo "set xlabel 'seconds since the logins arrived'"
			echo "set title '$(label "$v")'"
			echo "plot '$BARS/$v.bars' using 2:1:(\$3-\$2):(0) with vectors nohead lw 2 lc rgb '#9ecae1' title 'start-up', '' using 2:1 with points pt 7 ps 0.6 lc rgb '#d62728' title 'admitted', '$RAW/$v.ps' using 1:2 axes x1y2 with lines lc rgb '#ff7f0e' title 'cpu some avg10'"
		done
		echo "unset multiplot"
	} | gnuplot || say "gnuplot failed"
	PNG_NOTE="![Logon storm timeline]($PNG_LINK)

[\`$PNG_LINK\`]($PNG_LINK): one panel per gate; each row is a login, the red dot its admission,
the blue bar its start-up until done; the orange line is cpu \`some avg10\` of /proc/pressure."
fi

echo "## 10. A simulated logon storm: fixed intervals against pressure="
echo
echo "$STORM_N logins arrive at once (pamtester under pam_wrapper, the auth phase, a private"
echo "redis-server on a Unix socket, \`max_wait=${MAX_WAIT:-10m}\`). Each admitted login then runs a \"heavy"
echo "start-up\" of fixed work, standing in for a home mount and profile sync: an awk loop"
echo "calibrated to about 1.5 s of one CPU, then 16 MiB written with \`fsync\`; under contention"
echo "a start-up takes longer. \`/proc/pressure/cpu\` is sampled every 250 ms during each storm"
echo "(\`bench/storm.sh\`, $NPROC CPUs, ${REST:-5} s of rest before each storm)."
echo
echo "| gate | logins done | last admitted, s | all done, s | worst start-up, s | peak cpu some avg10 | mean cpu some avg10 | logins held by pressure |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s' "$ROWS"
echo
echo "$PNG_NOTE"
echo
# The claim, read from this run's figures by a rule stated with it.
verdict=$(awk -v pd="$DONE_pressure" -v pw="$WORST_pressure" -v sd="$DONE_short" \
	-v sw="$WORST_short" -v ld="$DONE_long" -v lw="$WORST_long" 'BEGIN {
	# the best fixed interval: the one done first among those whose worst start-up is
	# at most 1.5 x the long interval'"'"'s (the protected one)
	bd = ld; bw = lw; b = "long"
	if (sw <= 1.5 * lw && sd < ld) { bd = sd; bw = sw; b = "short" }
	ok = pd <= 1.2 * bd && pw <= 1.5 * bw
	printf "%s %s %.2f", ok ? "supported" : "not-supported", b, pd / bd }')
read -r claim best ratio <<< "$verdict"
claim=${claim/-/ }
if [ "$best" = long ]; then best="interval=$LONG"; else best="interval=$SHORT"; fi
echo "**The claim** (\"pressure= gets everyone in about as fast as the best fixed interval,"
echo "without knowing it\") **is $claim by this run**. The rule: supported when everyone is"
echo "done within 1.2 x the time of the best fixed interval, with a worst start-up within"
echo "1.5 x its own; the best fixed interval is the one done first among those whose worst"
echo "start-up stays within 1.5 x that of the long one (here $best). With pressure= everyone"
echo "was done in $DONE_pressure s ($ratio x the best), against $DONE_short s for"
echo "interval=$SHORT and $DONE_long s for interval=$LONG; worst"
echo "start-ups $WORST_pressure s, $WORST_short s and $WORST_long s, against $WORST_none s"
echo "with no gate. Only these two fixed intervals were tried: one between them may beat"
echo "pressure=. Whatever else loads the machine (see the avg10 with one start-up at a time"
echo "under interval=$LONG) is load pressure= also waits for, though it is not the storm's,"
echo "and the seconds vary from run to run. \`avg10\` lags by"
echo "about ten seconds: the first samples of a storm still carry the tail of the one before."
