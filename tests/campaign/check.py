# SPDX-License-Identifier: BSD-3-Clause
"""The fault campaign's checker (tests/campaign/CONTRACT.md, docs/MODEL.md "The fault campaign").

    check.py collect DIR               one fault's raw files into DIR/logins.tsv
    check.py report OUT FAULT... [--bench FILE]
                                       P1-P8 for each fault, OUT/REPORT.md; exit 1 on any
                                       violation past the fault's stated bound

Times are microseconds on one observer clock (CLOCK_REALTIME). Python's standard library only.
"""
import glob
import os
import re
import subprocess
import sys
import time

COLUMNS = ("id host user t_start t_admit t_end rc outcome position wait_ms interval_ms burst "
           "max_wait_ms timeout_ms per_host rhost cpu_ms t_res t_decide via flags t_slot "
           "decisions").split()

# docs/MODEL.md and pam_flowslot(7): a waiter renews every 2 s; a place not renewed for 5 s is
# given up; a login first in line within 2 s of its slot is admitted (the commit window).
RENEW_US = 2000000
# queue.c: a login first in line, or whose renewal failed, renews a timeout (the per-host
# file's lock wait, 1 s) before its slot, should that come before SLOT_RENEW_US.
LOCK_WAIT_US = 1000000
LEASE_US = 5000000
COMMIT_US = 2000000
GHOST_US = 60000000
# P8's CPU bound, in the baseline's CPU per call slot. A login is a process of some 25 ms of
# CPU, most of it exec and linking, and that figure varies: on a busy 2-core machine one login
# among 16 used 67 ms where the baseline's dearest used 21 per slot (CI, the partition fault,
# a login on the host's schedule, whose like used 25 to 33 ms in each of 4 runs here). Four
# times holds that; a login that spins uses its whole wall time, tens of times more.
CPU_FACTOR = 4

LINE = re.compile(r"^(\d+) .*SYSLOG\(\d\): (.*)$")
KV = re.compile(r"(\w+)=(\S*)")


def read_meta(d):
    meta = {}
    with open(os.path.join(d, "meta")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            meta[k] = v
    return meta


def read_events(d):
    ev = []
    path = os.path.join(d, "events.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.rstrip("\n").split("\t")
                if len(p) >= 2 and p[0].isdigit():
                    ev.append((int(p[0]), p[1], p[2] if len(p) > 2 else ""))
    return ev


def read_stamps(path):
    """tests/helpers/stamp.sh's lines, "<ns> <user>": the first stamp of each user, in microseconds."""
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2 and p[0].isdigit():
                    out.setdefault(p[1], int(p[0]) // 1000)
    return out


def parse_login(d, lid, meta, starts, admits, events):
    """One login's record from its files."""
    rec = dict.fromkeys(COLUMNS, "")
    rec.update(id=lid, user=lid, interval_ms=meta["interval_ms"], burst=meta["burst"],
               max_wait_ms=meta["max_wait_ms"], timeout_ms=meta["timeout_ms"],
               per_host=meta["per_host"])
    base = os.path.join(d, "l", lid)
    if os.path.exists(base + ".who"):
        with open(base + ".who") as f:
            rec["host"], rec["rhost"] = (f.read().split() + ["", ""])[:2]
    rec["t_start"] = starts.get(lid, "")
    rec["t_admit"] = admits.get(lid, "")
    flags = set()
    via = ""
    refused_at = abandoned_at = None
    decisions = []  # (stamp, kind, wait_ms): the reservation's answer, then each renewal's
    first_failure = None
    if os.path.exists(base + ".err"):
        with open(base + ".err", errors="replace") as f:
            for line in f:
                m = LINE.match(line)
                if not m:
                    continue
                t, msg = int(m.group(1)), m.group(2)
                kv = dict(KV.findall(msg))
                if msg.startswith(("queued: ", "admitted: ")) and rec["t_res"] == "":
                    rec.update(t_res=t, wait_ms=kv.get("wait_ms", ""),
                               position=kv.get("position", ""))
                    via = via or kv.get("via", "")
                    decisions.append((t, msg.split(":")[0], int(kv.get("wait_ms", "0")),
                                      int(kv.get("position", "0") or 0)))
                elif msg.startswith("renewed: "):  # debug: each renewal's answer
                    decisions.append((t, "renewed-" + msg.split()[1],
                                      int(kv.get("wait_ms", "0")),
                                      int(kv.get("position", "0") or 0)))
                elif msg.startswith("refused: "):
                    refused_at = t
                    if rec["t_res"] == "":
                        rec["t_res"] = t  # refused at its reservation: nothing held
                    else:
                        flags.add("refused_late")
                    if "per_host=" in msg:
                        flags.add("per_host")
                    via = via or kv.get("via", "")
                elif msg.startswith("abandoned: "):
                    abandoned_at = t
                elif "answered when asked again with the same place" in msg:
                    flags.add("asked_again")  # its reservation timed out, and was asked again
                elif "the renewal that timed out was answered when asked again" in msg:
                    flags.add("renew_asked_again")  # a renewal timed out, then was answered
                elif "is stuck: " in msg and "goes on without it" in msg:
                    flags.add("stuck")  # it took the file over
                elif "admitting without a wait" in msg:
                    via = "fallback-open"
                elif msg.startswith("fallback=closed"):
                    via = "fallback-closed"
                elif msg.startswith("fallback=local"):
                    flags.add("fallback_local")
                elif "going in blind" in msg or "going in at the last slot given" in msg:
                    # the latter: an earlier build, which went in blind at the first failure
                    flags.add("blind")
                    if "its lease ran out before it" in msg:
                        flags.add("blind_lapsed")
                    # its renewals failed: since a renewal that timed out is asked again
                    # until its slot, the first line may be this one, at the slot
                    if "cannot be renewed" in msg or "could not be renewed" in msg:
                        flags.add("renew_failed")
                    first_failure = first_failure or t
                elif "cannot be renewed" in msg:
                    flags.add("renew_failed")
                    first_failure = first_failure or t
    # A renewal that met the fault: it went unanswered, and was answered when asked again
    # (within 4 x timeout) or failed; which of the two depends on when in the fault it began.
    if flags & {"renew_failed", "renew_asked_again"}:
        flags.add("renew_unanswered")
    rec["via"] = via
    if via == "local" and meta.get("url", "") not in ("", "local"):
        flags.add("fallback_local")  # an earlier build logs no line for it
    done = None
    if os.path.exists(base + ".done"):
        with open(base + ".done") as f:
            p = f.read().split()
        if len(p) >= 3:
            done = p
            rec["rc"], rec["t_end"], rec["cpu_ms"] = int(p[0]), int(p[1]), int(p[2])
    kinds = {k for _, k, x in events if x == lid}
    for k in ("kill", "stop", "hangup", "hung"):
        if k in kinds:
            flags.add({"kill": "killed", "stop": "stopped", "hangup": "hungup",
                       "hung": "hung"}[k])
    if done is None or "hung" in flags:
        outcome = "error"
        flags.add("hung")
    elif "killed" in flags and rec["rc"] >= 128:
        outcome = "killed"
    elif rec["rc"] == 0 and rec["t_admit"] != "":
        url_local = meta.get("url", "") in ("", "local")
        fallback = via == "fallback-open" or ("fallback_local" in flags and not url_local)
        outcome = "fallback" if fallback else "admitted"
    elif abandoned_at is not None:
        outcome = "abandoned"
    elif refused_at is not None or via == "fallback-closed":
        outcome = "refused"
    else:
        outcome = "error"
    rec["outcome"] = outcome
    if outcome in ("admitted", "fallback"):
        rec["t_decide"] = rec["t_admit"]
    elif outcome == "refused" and refused_at is not None:
        rec["t_decide"] = refused_at
    elif outcome == "abandoned":
        rec["t_decide"] = abandoned_at
    else:
        rec["t_decide"] = rec["t_end"]
    given = [(t, w, p) for t, k, w, p in decisions if k != "renewed-refused"]
    if given:
        rec["t_slot"] = given[-1][0] + given[-1][1] * 1000
    # Gone in blind past its lease: its place lapsed before its slot, and that slot may be
    # given again (pam_flowslot(7), A lapsed place at its slot counts as admitted). The lease
    # runs 5 s from the last call that reached the schedule, which was at most one renewal
    # period (and the failed call's timeout) before the first failure.
    if "blind" in flags and given and first_failure is not None:
        lease_end = first_failure - 2000000 - int(meta["timeout_ms"]) * 1000 + 5000000
        if rec["t_slot"] > lease_end:
            flags.add("blind_lapsed")
    # Gone in blind when it was not first in line: its slot may have been given on meanwhile
    # (MODEL.md P1: a login ahead of it went in late, or its place stood past its slot).
    if "blind" in flags and given and given[-1][2] > 1:
        flags.add("blind_behind")
    rec["flags"] = ",".join(sorted(flags))
    rec["decisions"] = ",".join("%d:%s:%d:%d" % d for d in decisions)
    return rec


def collect(d):
    meta = read_meta(d)
    starts = read_stamps(os.path.join(d, "starts"))
    admits = read_stamps(os.path.join(d, "admits"))
    events = read_events(d)
    ids = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(d, "l", "*.pid")))
    rows = [parse_login(d, i, meta, starts, admits, events) for i in ids]
    with open(os.path.join(d, "logins.tsv.tmp"), "w") as f:
        f.write("\t".join(COLUMNS) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]) for c in COLUMNS) + "\n")
    os.replace(os.path.join(d, "logins.tsv.tmp"), os.path.join(d, "logins.tsv"))


# ---- the report ----------------------------------------------------------------------------

def num(v):
    return int(v) if v not in ("", None) else None


def read_logins(d):
    out = []
    with open(os.path.join(d, "logins.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(head, line.rstrip("\n").split("\t")))
            for c in ("t_start", "t_admit", "t_end", "rc", "position", "wait_ms", "interval_ms",
                      "burst", "max_wait_ms", "timeout_ms", "per_host", "cpu_ms", "t_res",
                      "t_decide", "t_slot"):
                r[c] = num(r.get(c, ""))
            r["decisions"] = [(int(f[0]), f[1], int(f[2])) for f in (
                d.split(":") for d in r.get("decisions", "").split(",") if d)]
            r["flags"] = set(x for x in r.get("flags", "").split(",") if x)
            bound_times(r)
            out.append(r)
    return out


def bound_times(r):
    """What the stamps prove about a login's times. A stamp comes after what it stamps (a
    line's after the reply it reports, an admission's after the admission), so it is an upper
    bound; the start stamp comes before the module runs. Lower bounds follow the module's own
    cadence: the reservation's call is after the start, and each renewal's call at least
    min(2 s, the wait less a lead) after the call before it began (queue.c renews every
    SLOT_RENEW_US or later, or, first in line, its timeout or the file's lock wait before its
    slot), so a reply is no earlier than the chain of those from the start. A load that delays
    the stamps can so only hide a violation, never make one.
    Sets r["chain"] (reply_lb, reply_ub, kind, wait_us per answer), r["slot_lb"] and
    r["slot_ub"] (the last slot given), r["dec_lb"] (the decision, at the earliest)."""
    lb = r["t_start"]
    # A login first in line renews early enough to keep to its slot: its timeout (Redis) or
    # the file's lock wait (1 s) before it.
    chain = []
    lead = LOCK_WAIT_US if r["via"] == "local" else (r["timeout_ms"] or 0) * 1000
    for t, k, w in r["decisions"]:
        if lb is None:
            break
        chain.append((lb, t, k, w * 1000))
        lb = lb + max(0, min(RENEW_US, w * 1000 - lead))
    r["chain"] = chain
    given = [c for c in chain if c[2] != "renewed-refused"]
    r["slot_lb"] = given[-1][0] + given[-1][3] if given else None
    r["slot_ub"] = given[-1][1] + given[-1][3] if given else None
    if r["outcome"] in ("admitted", "fallback") and r["slot_lb"] is not None:
        r["dec_lb"] = r["slot_lb"]
    elif r["outcome"] == "refused" and chain and chain[-1][2] == "renewed-refused":
        r["dec_lb"] = chain[-1][0]
    else:
        r["dec_lb"] = r["t_start"] if r["outcome"] == "refused" else r["t_decide"]


UNITS = {"us": 1, "ms": 1000, "s": 1000000}


def parse_bound(v):
    """A bound as the faults state it: "-" (not checked), a duration (2s, 500ms, 0) in µs, or
    a count."""
    if v == "-":
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s)?", v)
    if not m:
        raise ValueError("bad bound %r" % v)
    return round(float(m.group(1)) * UNITS[m.group(2) or "us"]) if m.group(2) else int(m.group(1))


def read_bounds(d):
    """P<n> VALUE # reason; expect WHAT N # reason; never WHAT # reason (expects, N = -1)."""
    bounds, reasons, expects = {}, {}, []
    path = os.path.join(d, "bounds")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                text, _, reason = line.partition("#")
                p = text.split()
                if not p:
                    continue
                if p[0] == "expect" and len(p) == 3:
                    expects.append((p[1], int(p[2]), reason.strip()))
                elif p[0] == "never" and len(p) == 2:
                    expects.append((p[1], -1, reason.strip()))
                elif re.fullmatch(r"P[1-8]", p[0]) and len(p) == 2:
                    bounds[p[0]] = parse_bound(p[1])
                    reasons[p[0]] = (p[1], reason.strip())
                else:
                    raise ValueError("%s: bad line %r" % (path, line))
    return bounds, reasons, expects


def ms(us):
    return "%.0f ms" % (us / 1000.0) if abs(us) < 10000000 else "%.1f s" % (us / 1e6)


def schedule_of(r, meta):
    """Which schedule admitted a login: Redis's (one for all hosts), a host's file, or none
    (admitted without a wait by a failure policy)."""
    if r["via"] == "redis":
        return "redis"
    if r["via"] == "local":
        return "local:" + r["host"]
    return None


def slot_early(r):
    """A login's slot at the earliest (bound_times), or its admission's stamp if that is earlier
    (an earlier build logs no renewal, and a slot may have moved up since its reservation):
    what P1 and P5 hold the schedule to is its slots, not the machine's wake-ups."""
    if r["slot_lb"] is not None:
        return min(r["t_admit"], r["slot_lb"])
    return r["t_admit"]


def measure_epsilon(logins, interval_us):
    """The observer's slack, from the baseline: the larger of
    - how late an admission is stamped behind its slot: the largest lateness of an admission
      behind the last slot the module's log gave it (that line's stamp plus its wait_ms); no
      admission goes in before its slot, so a stamp is between 0 and this late;
    - how far a reply's stamp moves a slot: on the baseline's schedule two reservations in a
      row that both queue get slots exactly one interval apart on Redis's clock, so how far
      their stamped slots are from that is the stamps' doing.
    Returns (epsilon, lateness values, slot jitter values)."""
    late = [r["t_admit"] - r["t_slot"] for r in logins
            if r["outcome"] == "admitted" and r["t_slot"] is not None]
    queued = sorted((r for r in logins if r["t_res"] is not None and r["wait_ms"]
                     and r["outcome"] != "refused"), key=lambda r: r["t_res"])
    jitter = [(b["t_res"] + b["wait_ms"] * 1000) - (a["t_res"] + a["wait_ms"] * 1000)
              - interval_us for a, b in zip(queued, queued[1:])]
    if len(late) < 2:
        return None, late, jitter
    return max([0] + late + [abs(j) for j in jitter]), late, jitter


class Prop:
    def __init__(self, name):
        self.name, self.n, self.worst, self.checked, self.what = name, 0, None, 0, ""

    def see(self, value, limit, what):
        """value: how far the property was missed (µs or places; <= 0 kept); limit: the
        stated bound plus slack. A value past limit is a violation."""
        self.checked += 1
        if self.worst is None or value > self.worst:
            self.worst, self.what = value, what
        if value > limit:
            self.n += 1
            return True
        return False


def evaluate(fault, d, eps, base):
    meta = read_meta(d)
    logins = read_logins(d)
    events = read_events(d)
    bounds, reasons, expects = read_bounds(d)
    T = int(meta["interval_ms"]) * 1000
    B = int(meta["burst"])
    MW = int(meta["max_wait_ms"]) * 1000
    TO = int(meta["timeout_ms"]) * 1000
    PH = int(meta["per_host"])
    props = {p: Prop(p) for p in ("P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8")}
    notes = []
    violations = []

    def bound(p, default=0):
        return bounds.get(p, default) if p in bounds else default

    def check(p, value, what, unit_us=True):
        if p in bounds and bounds[p] is None:
            props[p].see(value, float("inf"), what)
            return
        limit = bound(p) + (eps if unit_us else 0)
        if props[p].see(value, limit, what):
            violations.append("%s %s: %s (bound %s%s)" % (
                fault, p, what, reasons[p][0] if p in reasons else "0",
                " + epsilon" if unit_us else ""))

    stop_at, cont_at, kill_at = {}, {}, {}
    for t, k, x in events:
        if k == "stop":
            stop_at.setdefault(x, t)
        elif k == "cont":
            cont_at[x] = t
        elif k == "kill":
            kill_at.setdefault(x, t)
    live = [r for r in logins if not ({"killed", "stopped"} & r["flags"])]
    admitted = [r for r in logins if r["outcome"] in ("admitted", "fallback")
                and r["t_admit"] is not None]
    by_sched = {}
    for r in admitted:
        s = schedule_of(r, meta)
        if s is not None:
            by_sched.setdefault(s, []).append(r)
    for s in by_sched.values():
        s.sort(key=lambda r: r["t_admit"])

    # P1: on one schedule, admissions i < j at least (j - i - burst + 1) * interval apart: j's
    # admission against i's slot (a login that goes in late is the bound MODEL.md states for
    # P1, its next may follow it closer: the schedule counted it at its slot). A login gone in
    # blind past its lease or when not first in line, or stopped, is the bound MODEL.md states
    # for P1 ("not checked"); one gone in blind first in line, within its lease, counts (R5).
    gaps = []
    for s in by_sched.values():
        seq = [r for r in s if not ({"blind_lapsed", "blind_behind", "stopped"} & r["flags"])]
        for i in range(len(seq)):
            for j in range(i + 1, len(seq)):
                k = j - i - B + 1
                if k < 1:
                    continue
                need = k * T
                gap = seq[j]["t_admit"] - slot_early(seq[i])
                if k == 1:
                    gaps.append(gap)
                if gap - need > 2 * T:
                    break  # later pairs only get further apart
                check("P1", need - gap, "%s went in %s after %s's slot, %d interval(s) due" % (
                    seq[j]["id"], ms(gap), seq[i]["id"], k))
    off = [r["id"] for r in admitted if schedule_of(r, meta) is None]
    if off:
        notes.append("%d login(s) admitted without a wait by the failure policy, on no schedule "
                     "(pam_flowslot(7): when the local schedule cannot be used, the login is "
                     "admitted without a wait and a warning is logged): %s" % (
                         len(off), " ".join(off)))
    exempt = [r["id"] for s in by_sched.values() for r in s
              if {"blind_lapsed", "blind_behind", "stopped"} & r["flags"]]
    if exempt:
        notes.append("P1 leaves out %d login(s) gone in blind past their lease or not first in "
                     "line, or stopped (%s), as MODEL.md P1 says" % (len(exempt),
                                                                     " ".join(exempt)))

    # P2: a login that reserved earlier (its reply stamped before the other started) and
    # stayed goes in no later (at its earliest slot) than one that reserved later (its stamp).
    for s in by_sched.values():
        seq = sorted((r for r in s if r["t_res"] is not None and not r["flags"] & {"stopped"}),
                     key=lambda r: r["t_res"])
        for i in range(len(seq)):
            for j in range(i + 1, len(seq)):
                a, b = seq[i], seq[j]
                if a["t_res"] >= b["t_start"]:
                    continue
                inv = slot_early(a) - b["t_admit"]
                if inv > 0:
                    check("P2", inv, "%s reserved %s before %s, went in %s after it" % (
                        a["id"], ms(b["t_res"] - a["t_res"]), b["id"], ms(inv)))
        if seq:
            props["P2"].checked += 1

    # P3: no admission before its slot: the last slot the schedule gave it, at the earliest
    # (bound_times: with debug the module logs every renewal's answer).
    # A module that does not (an earlier build) leaves the reservation's slot, less one
    # interval for each place given up ahead of it before it went in.
    renewals_logged = any(k.startswith("renewed-") for r in logins for _, k, _ in r["decisions"])
    gone = [r for r in logins if r["t_res"] is not None and r["wait_ms"] is not None
            and (r["outcome"] in ("abandoned", "killed", "error", "refused")
                 or r["flags"] & {"stopped", "refused_late"})]
    for r in admitted:
        if r["slot_lb"] is None or schedule_of(r, meta) is None:
            continue
        ahead = 0
        if not renewals_logged:
            ahead = sum(1 for g in gone if g["t_res"] < r["t_res"] and g is not r
                        and schedule_of(g, meta) == schedule_of(r, meta)
                        and (g["t_decide"] or g["t_end"] or 0) < r["t_admit"])
        slot = r["slot_lb"] - ahead * T
        check("P3", slot - r["t_admit"], "%s went in %s before its slot" % (
            r["id"], ms(slot - r["t_admit"])) if slot > r["t_admit"] else
            "%s went in %s after its slot" % (r["id"], ms(r["t_admit"] - slot)))

    # P4: a live login is admitted or refused by its reservation + max_wait + one call's
    # timeout; a stopped one by its first renewal once it runs again, which comes when its sleep
    # has run for what was left of it when it stopped, 2 s at most (MODEL.md P4).
    for r in logins:
        if r["t_start"] is None or r["outcome"] == "killed":
            continue
        due = r["t_start"] + MW + TO
        if r["id"] in stop_at:  # its sleep resumes for what was left of it when stopped
            due = max(due, cont_at.get(r["id"], r["t_end"] or 0) + RENEW_US + TO)
        dec = r["dec_lb"] if r["dec_lb"] is not None else r["t_end"]
        if r["outcome"] == "abandoned":  # decided once the far end hung up, not before
            dec = max([t for t, k, x in events if k == "hangup" and x == r["id"]] + [0])
        if dec is None:
            continue
        check("P4", dec - due, "%s %s %s %s its reservation + max_wait + timeout" % (
            r["id"], r["outcome"], ms(abs(dec - due)), "past" if dec > due else "within"))

    # P5: places given back stop delaying: while a live login waits through a gap between two
    # admissions on its schedule, that gap (from the first's admission to the second's slot)
    # is at most one interval.
    for s, seq in by_sched.items():
        witnesses = [r for r in seq if r in live and r["t_res"] is not None]
        for a, b in zip(seq, seq[1:]):
            gap = slot_early(b) - a["t_admit"]
            w = [x for x in witnesses if x["t_res"] < slot_early(a)
                 and slot_early(x) >= b["t_admit"] and x is not a]
            if not w:
                continue
            check("P5", gap - T, "%s waited while %s and %s went in %s apart" % (
                w[0]["id"], a["id"], b["id"], ms(gap)))

    # P6: no host holds more than per_host places, ghosts included, at any reservation it was
    # granted. Counted are only places certainly held (a login queued more than the commit
    # window before its admission) and ghosts certainly kept (a hang-up, 60 s).
    if PH > 0:
        for j in logins:
            if j["t_res"] is None or j["outcome"] == "refused" and "refused_late" not in j["flags"]:
                continue
            t = j["t_res"]  # j's reservation, at the latest
            held = 0
            for k in logins:
                if (k is j or k["rhost"] != j["rhost"] or k["t_res"] is None
                        or k["t_res"] >= j["t_start"]):
                    continue  # not certainly before j
                if k["flags"] & {"stopped", "killed"}:
                    continue
                if k["outcome"] in ("admitted", "fallback"):
                    if (k["slot_lb"] is not None and k["slot_lb"] - t > COMMIT_US
                            and schedule_of(k, meta) == schedule_of(j, meta)):
                        held += 1
                elif k["outcome"] == "abandoned":
                    end = k["t_decide"]
                    if end is not None and end < j["t_start"] and t - end < GHOST_US - 1000000:
                        held += 1
                elif ("refused_late" in k["flags"] and k["dec_lb"] is not None
                      and k["dec_lb"] > t):
                    held += 1
            check("P6", held + 1 - PH, "%s from %s granted a place while its host held %d" % (
                j["id"], j["rhost"], held), unit_us=False)

    # P7: a refusal reserves nothing: each slot granted (a reservation's or a renewal's) is no
    # later than one interval after the latest slot granted before it (or now).
    # Each at the earliest against the latest (bound_times): every other answer that may have
    # come before it (its call begun, at the earliest, before this one's reply at the latest),
    # their slots at the latest.
    # A waiter that goes in late, its admission's reply after the slot it was last told (woken
    # late on a busy machine; the reply's stamp, the call's start being known only loosely), is
    # admitted then, and the schedule moves on from then
    # (P1: admissions an interval apart): every slot behind it moves back as much, which those
    # waiting learn at their next renewal. So each such lateness before a slot, of a slot no
    # later than those it is held to, is added to its bound.
    for s in set(schedule_of(r, meta) for r in logins) - {None}:
        given = [(lb, ub, w, r["id"], k) for r in logins if schedule_of(r, meta) == s
                 for lb, ub, k, w in r["chain"] if k != "renewed-refused"]
        lates = []
        for r in logins:
            if schedule_of(r, meta) != s:
                continue
            for (_, pu, _, pw), (_, u, k, w) in zip(r["chain"], r["chain"][1:]):
                if k.endswith("admitted") and w == 0 and u > pu + pw:
                    lates.append((u, pu + pw, u - (pu + pw)))
        for lb, ub, w, lid, kind in given:
            before = [u + x for l, u, x, i, _ in given if l < ub and (i, l) != (lid, lb)]
            if not before:
                continue
            late = sum(d for u, told, d in lates if u < ub and told <= max(before))
            due = max(ub, max(before) + T + late)
            check("P7", lb + w - due, "%s's slot (%s) %s past the latest slot granted + "
                  "interval" % (lid, kind, ms(lb + w - due)))

    # P8: nothing hangs past its bound: every login ends by its reservation + max_wait + two
    # calls' timeouts (its last renewal and a leave) + the exit measured in the baseline; and
    # its CPU time stays within CPU_FACTOR times the baseline's cost of one call slot (a
    # reservation and a renewal every 2 s) for as long as it lasted.
    for r in logins:
        if "hung" in r["flags"]:
            check("P8", float("inf"), "%s still running at the run's deadline: killed" % r["id"])
            continue
        if r["t_start"] is None or r["t_end"] is None or r["outcome"] == "killed":
            continue
        due = r["t_start"] + MW + 2 * TO + base["exit_us"]
        if r["id"] in stop_at:
            due = max(due, cont_at.get(r["id"], r["t_end"]) + RENEW_US + 2 * TO
                      + base["exit_us"])
        check("P8", r["t_end"] - due, "%s ended %s %s its bound" % (
            r["id"], ms(abs(r["t_end"] - due)), "past" if r["t_end"] > due else "within"))
        wall_s = (r["t_end"] - r["t_start"]) / 1e6
        cpu_due = CPU_FACTOR * base["cpu_per_slot_ms"] * (1 + wall_s / 2)
        if r["cpu_ms"] is not None and r["cpu_ms"] > cpu_due:
            check("P8", float("inf"), "%s used %d ms of CPU in %.1f s (bound %.0f ms)" % (
                r["id"], r["cpu_ms"], wall_s, cpu_due))

    # A login that ended otherwise than admitted, refused, abandoned or killed: the module
    # failed it (or the harness did: either way the run proves nothing for it).
    for r in logins:
        if r["outcome"] == "error":
            violations.append("%s: %s ended in error (exit status %s; not a property P1-P8: "
                              "the module or the harness failed it)" % (
                                  fault, r["id"], r["rc"] if r["rc"] is not None
                                  else "none: never ended"))

    # The fault must have happened as designed.
    count = {}
    for r in logins:
        count[r["outcome"]] = count.get(r["outcome"], 0) + 1
        for f in r["flags"]:
            count[f] = count.get(f, 0) + 1
    # "N ID...": how many waiters an injection met, and which (an earlier runner: N alone).
    met = [x.split() for _, k, x in events if k == "waiting" and x.split()[:1]
           and x.split()[0].isdigit()]
    if met:
        count["waiting"] = min(int(m[0]) for m in met)  # the fewest any injection met
    met_ids = sorted(set(i for m in met for i in m[1:]))
    # A fault's own events that say it happened: "lost 1", a key that was there when deleted.
    count["lost"] = sum(1 for _, k, x in events if k == "lost" and x == "1")
    if not any(k == "inject" for _, k, _ in events) and fault != "none":
        violations.append("%s: never injected" % fault)
    # Not a property broken: the fault did not happen as designed, or did what it must not;
    # said so, with the logins it concerns.
    for what, n, reason in expects:
        if n < 0 and count.get(what, 0) > 0:
            who = [r["id"] for r in logins if r["outcome"] == what or what in r["flags"]]
            violations.append("%s: expected no %s, saw %d: %s (%s; no property P1-P8 broken)" % (
                fault, what, count[what], " ".join(who) or "-", reason))
        elif count.get(what, 0) < n:
            violations.append("%s: expected at least %d %s, saw %d (%s); the injection met %s: "
                              "the fault did not happen as designed, no property P1-P8 "
                              "broken" % (fault, n, what, count.get(what, 0), reason,
                                          " ".join(met_ids) or "no waiter"))
    return dict(meta=meta, logins=logins, props=props, notes=notes, violations=violations,
                count=count, reasons=reasons, gaps=gaps, expects=expects)


def baseline(d):
    logins = read_logins(d)
    eps, late, jitter = measure_epsilon(logins, int(read_meta(d)["interval_ms"]) * 1000)
    ends = [r["t_end"] - r["t_decide"] for r in logins
            if r["t_end"] is not None and r["t_decide"] is not None]
    slots = [r["cpu_ms"] / (1 + (r["t_end"] - r["t_start"]) / 2e6) for r in logins
             if r["cpu_ms"] is not None and r["t_end"] is not None and r["t_start"] is not None]
    return dict(eps=eps, late=late, jitter=jitter, exit_us=max(ends) if ends else 0,
                cpu_per_slot_ms=max(slots) if slots else 0, n=len(logins))


def cell(p):
    if p.checked == 0:
        return "n/a"
    worst = ""
    if p.worst is not None and p.worst != float("inf"):
        worst = " (worst %s)" % (ms(p.worst) if p.name != "P6" else "%+d" % p.worst)
    return ("**%d ✗**%s" % (p.n, worst)) if p.n else "0%s" % worst


def git_rev(top):
    try:
        return subprocess.run(["git", "-C", top, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(out, faults, bench=None):
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    base_dir = os.path.join(out, "none")
    if not os.path.exists(os.path.join(base_dir, "logins.tsv")):
        print("check.py: no baseline (the fault none) in %s" % out, file=sys.stderr)
        return 1
    base = baseline(base_dir)
    if base["eps"] is None:
        print("check.py: the baseline admitted too few logins to measure epsilon",
              file=sys.stderr)
        return 1
    eps = base["eps"]
    results = []
    for f in faults:
        d = os.path.join(out, f)
        if os.path.exists(os.path.join(d, "failed")) or not os.path.exists(
                os.path.join(d, "logins.tsv")):
            results.append((f, None))
            continue
        results.append((f, evaluate(f, d, eps, base)))
    meta0 = read_meta(base_dir)
    lines = []
    lines.append("# The fault campaign")
    lines.append("")
    module = meta0.get("module", "?")
    if re.search(r"/tree/pam_flowslot\.so$", module):
        module = "this tree's pam_flowslot.so"
    else:
        module = "`%s`" % module
    lines.append("Run `%s` of %s, commit %s, module %s." % (
        meta0.get("mode", "?"), time.strftime("%Y-%m-%d %H:%M %Z"), git_rev(top), module))
    lines.append("")
    lines.append("Epsilon = %s, measured in the baseline: the larger of how late any of its %d "
                 "admissions was stamped behind its slot (the stamp of the module's line that "
                 "gave the slot plus its wait_ms: from %s to %s), and how far the stamps of two "
                 "replies in a row moved their slots from one interval apart (%d pairs, at most "
                 "%s). It is the slack of P1, P2, P3, P4, P5, P7 and P8; a login's exit after "
                 "its decision, at most %s in the baseline, is P8's; and P8's CPU bound is %d "
                 "times the baseline's %.1f ms of CPU per call slot (one reservation and one renewal "
                 "every 2 s)." % (
                     ms(eps), len(base["late"]), ms(min(base["late"])), ms(max(base["late"])),
                     len(base["jitter"]), ms(max([0] + [abs(x) for x in base["jitter"]])),
                     ms(base["exit_us"]), CPU_FACTOR, base["cpu_per_slot_ms"]))
    lines.append("")
    head = ("| fault | logins | admitted | refused | fallback | other | P1 | P2 | P3 | P4 | P5 "
            "| P6 | P7 | P8 | bounds |")
    lines.append(head)
    lines.append("|" + "---|" * 15)
    status = 0
    allv = []
    for f, res in results:
        if res is None:
            lines.append("| %s | setup failed |%s" % (f, " |" * 13))
            allv.append("%s: setup failed" % f)
            status = 1
            continue
        c = res["count"]
        other = sum(c.get(k, 0) for k in ("abandoned", "killed", "error"))
        other_t = ", ".join("%d %s" % (c[k], k) for k in ("abandoned", "killed", "error")
                            if c.get(k))
        b = "; ".join("%s %s" % (p, res["reasons"][p][0]) for p in sorted(res["reasons"]))
        lines.append("| %s | %d | %d | %d | %d | %s | %s | %s |" % (
            f, len(res["logins"]), c.get("admitted", 0), c.get("refused", 0),
            c.get("fallback", 0), other_t or "0",
            " | ".join(cell(res["props"][p]) for p in sorted(res["props"])), b or "exact"))
        if res["violations"]:
            status = 1
            allv.extend(res["violations"])
        del other
    lines.append("")
    lines.append("A cell: the violations past the fault's bound (0, or **n ✗**), and the "
                 "worst case seen, violation or not: how far the property was missed (negative: "
                 "kept with that much to spare), in ms (P6 in places). n/a: nothing to check.")
    lines.append("")
    lines.append("## The faults and their bounds")
    lines.append("")
    for f, res in results:
        if res is None:
            continue
        m = res["meta"]
        lines.append("- **%s**: %s. interval %s ms, burst %s, max_wait %s ms, timeout %s ms, "
                     "per_host %s%s." % (f, m.get("description", ""), m["interval_ms"],
                                         m["burst"], m["max_wait_ms"], m["timeout_ms"],
                                         m["per_host"],
                                         ", " + m["options"] if m.get("options") else ""))
        for p in sorted(res["reasons"]):
            lines.append("  - %s %s: %s" % (p, res["reasons"][p][0], res["reasons"][p][1]))
        for n in res["notes"]:
            lines.append("  - %s" % n)
    lines.append("")
    lines.append("## Violations")
    lines.append("")
    lines.extend(["- " + v for v in allv] or ["None."])
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write(text)
    if bench:  # bench/faults.md, linked from docs/MODEL.md: every heading one level down
        with open(bench, "w") as f:
            f.write(re.sub(r"(?m)^(#+) ", r"#\1 ", text).replace(
                "## The fault campaign", "## The fault campaign (`make faults`)", 1))
    sys.stdout.write(text)
    return status


def main(argv):
    if len(argv) >= 2 and argv[0] == "collect":
        collect(argv[1])
        return 0
    if len(argv) >= 2 and argv[0] == "report":
        bench = None
        if "--bench" in argv:
            i = argv.index("--bench")
            bench = argv[i + 1]
            argv = argv[:i] + argv[i + 2:]
        return report(argv[1], argv[2:], bench)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
