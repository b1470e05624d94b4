# SPDX-License-Identifier: BSD-3-Clause
"""The schedule against its model (docs/MODEL.md): hypothesis drives random logins through
src/slot.lua on a private redis-server and on the per-host file's store (build/model/lsdrive),
on a clock the test sets, compares every reply with tests/model/model.py, and checks P1-P7 over
the admissions. Environment: MODEL_LUA (the script on the test's clock), MODEL_DRIVER
(lsdrive), MODEL_EXAMPLES (per backend), MODEL_STEPS (40 per example), MODEL_SEED (none:
derandomized), MODEL_COMPARE=0 (the properties alone, for an older tree), MODEL_BACKENDS
(redis,file), MODEL_SKIP and MODEL_SETTINGS (to tell which rules and settings a failure needs),
MODEL_CADENCE (fit: waiters renew as src/queue.c does now; fixed: every 2 s, as before the
leases fit the wait, for an older tree). Arguments name the test classes to run (Refused,
Replay, Queue_redis, Queue_file), all by default."""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import redis
from hypothesis import HealthCheck, settings, seed, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model import GHOST_LIFE, LEASE, RENEW, WINDOW, Schedule, Settings, lease_for, renew_for

S = 1_000_000
LEASE_BAND = 10 ** 16  # slot.lua's LEASE: the score band of the leases
GHOST_BAND = 2 * 10 ** 16  # slot.lua's GHOST
# fit: a waiting login renews renew_for its last answer after it, and at its slot (L2); fixed:
# every RENEW (SLOT_RENEW_US), as an older tree's module did, whose leases were LEASE.
CADENCE = os.environ.get('MODEL_CADENCE', 'fit')
T0 = 1_700_000_000 * S
SETTINGS = [Settings(1 * S, 1, 12 * S, 0), Settings(3 * S, 1, 12 * S, 1),
            Settings(1 * S, 4, 30 * S, 0), Settings(6 * S, 1, 12 * S, 2),
            Settings(2 * S, 2, 5 * S, 1),
            # A long queue: from the third in line on, places are far from their turn (L1, L2).
            Settings(10 * S, 1, 60 * S, 0),
            # Another stack, strict and impatient: refused unless the queue is empty, and then
            # a refused call has no say in the settings (rule (a), docs/MODEL.md).
            Settings(30 * S, 1, 5 * S, 0)]
FULL = list(SETTINGS)  # the replays' SETTINGS, whatever MODEL_SETTINGS says
# MODEL_SETTINGS=0,3: only these of SETTINGS (to tell which mix a failure needs).
SETTINGS = [SETTINGS[int(i)] for i in os.environ.get('MODEL_SETTINGS', '').split(',') if i] or \
    SETTINGS
COMPARE = os.environ.get('MODEL_COMPARE', '1') != '0'
BACKENDS = [b for b in os.environ.get('MODEL_BACKENDS', 'redis,file').split(',') if b]


class Redis:
    """src/slot.lua on a redis-server of the test's own, on the test's clock (ARGV[14])."""
    server = None

    @classmethod
    def start(cls):
        # The script first: a run that cannot have it starts no server (MODEL_LUA is made by
        # make check-model; bash tests/model/model.sh alone left a redis-server behind).
        with open(os.environ['MODEL_LUA']) as f:
            lua = f.read()
        cls.dir = tempfile.mkdtemp(prefix='flowslot-model.')
        sock = os.path.join(cls.dir, 'redis.sock')
        cls.server = subprocess.Popen(['redis-server', '--port', '0', '--unixsocket', sock,
                                       '--save', '', '--appendonly', 'no', '--dir', cls.dir],
                                      stdout=subprocess.DEVNULL)
        cls.r = redis.Redis(unix_socket_path=sock, socket_timeout=10)
        for _ in range(100):
            try:
                cls.r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        cls.script = cls.r.register_script(lua)

    @classmethod
    def stop(cls):
        if cls.server:
            cls.server.terminate()  # by pid: Popen knows it
            cls.server.wait()
            shutil.rmtree(cls.dir, ignore_errors=True)

    def __init__(self, n):
        self.key = 'model%s' % n

    def call(self, op, server_now, s, pid, who, host, heard=0):
        exp = self.r.get(self.key + ':expires')
        if exp is not None and server_now >= int(exp):
            self.r.delete(self.key, self.key + ':expires')
        r = self.script(keys=[self.key],
                        args=script_args(op, s, pid, who, host, heard) + [server_now])
        return answer(op, [int(x) for x in r])

    def members(self):
        """[(score, member)] as the key holds them, in order."""
        return [(sc, m.decode()) for m, sc in self.r.zrange(self.key, 0, -1, withscores=True)]

    def leases(self):
        return leases_in(self.members())

    def close(self):
        pass


def script_args(op, s, pid, who, host, heard=0):
    """ARGV[1..13] as the module sends them (src/rnode.c): database 0, the near lease LEASE,
    the commit window WINDOW; the next slot heard of (none but in ResetHeard), no place's age
    (a lost schedule is tests/suites/script.sh's and tests/model/diff.py's)."""
    return [op, s.interval, s.burst, s.max_wait, 0, pid, '' if who == '-' else who,
            '' if host == '-' else host, s.per_host, LEASE, WINDOW, heard, 0]


def answer(op, r):
    """The script's reply as the model gives it (None for what an older tree's leaves out)."""
    r = r + [None] * 7
    if op in ('peek', 'reset'):
        return (r[0], r[1], r[2], r[3], r[5], r[6])
    return tuple(r[:5])


def same_ends(got, want):
    """Lease ends the same, to the microsecond: the model keeps them as the scores do."""
    return got == want


def stored_head(members):
    """The head's fields (s:TAT:AT:OFF:INTERVAL:BURST:ADMITTED at score 0), and when its
    settings were asked for (the member t, scored -(2^52 + ASKED); 0 for none), or None."""
    heads = [m for sc, m in members if sc == 0 and m.startswith('s:')]
    asked = [-int(sc) - 2 ** 52 for sc, m in members if m == 't']
    if not heads:
        return None
    return tuple(int(x) for x in heads[0].split(':')[1:]) + ((asked or [0])[0],)


def leases_in(members):
    """{place id: the end of its lease}, from the set's l:ID:WHO:HOST members."""
    return {m.split(':')[1]: int(sc) - LEASE_BAND for sc, m in members
            if m.startswith('l:') and LEASE_BAND <= sc < GHOST_BAND}


class File:
    """The per-host file's store running the same script (src/lscript.c on src/lstore.c),
    through tests/model/lsdrive.c, on the test's clock. Its key expires in the store."""

    def __init__(self, n):
        self.key = 'model%s' % n
        self.p = subprocess.Popen([os.environ['MODEL_DRIVER']], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.set = []

    def call(self, op, server_now, s, pid, who, host, heard=0):
        args = ['eval', server_now, self.key] + script_args(op, s, pid, who, host, heard)
        self.p.stdin.write('\t'.join(str(a) for a in args) + '\n')
        self.p.stdin.flush()
        reply, held = self.p.stdout.readline().split(), self.p.stdout.readline().split()
        if not reply or not held:
            raise RuntimeError('lsdrive ended')
        self.set = [(float(held[i]), held[i + 1]) for i in range(1, len(held), 2)]
        if reply[0] != 'ok':
            raise RuntimeError('lsdrive: ' + ' '.join(reply[1:]))
        return answer(op, [int(x) for x in reply[1:]])

    def members(self):
        """[(score, member)] as the store holds them after the last call, in order."""
        return self.set

    def leases(self):
        return leases_in(self.members())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


class Login:
    def __init__(self, n, who, host, s, now, retry):
        self.id, self.who, self.host, self.s = '%08x' % n, who, host, s
        self.begun, self.limit, self.retry = now, now + s.max_wait, retry
        self.state, self.last, self.deadline = 'new', now, now
        self.stopped_until, self.stopped = 0, False
        self.told = (s.interval, s.burst)  # the settings of its last reply
        self.epoch = self.fwd_begun = self.fwd_told = 0  # set by Queue.reserve
        self.pos = 0  # its position in the last reply
        self.period, self.lease = RENEW, LEASE  # its renewal and lease, from its last reply

    def fit(self, wait, interval):
        """After a reply that holds its place: when it renews, and its lease, as src/queue.c
        computes them from the reply's wait and the schedule's interval (0: not named)."""
        if CADENCE == 'fit':
            self.period, self.lease = renew_for(wait, interval), lease_for(wait, interval)

    def next_call(self):
        return max(self.stopped_until, min(self.last + self.period, self.deadline))


class Violation(AssertionError):
    """A property broken, or a reply that is not the model's: one class each, so that
    hypothesis reports each kind's minimal sequence."""


P1, P2, P4, P5, P6, Reply = (type(n, (Violation,), {}) for n in ('P1', 'P2', 'P4', 'P5',
                                                                   'P6', 'Reply'))
L1, L2 = P5, P5  # the leases (docs/MODEL.md): part of P5
# Rules left out (MODEL_SKIP=step_clock,blind): to find which faults a failure needs.
SKIP = os.environ.get('MODEL_SKIP', '').split(',')


def unless_skipped(name):
    return precondition(lambda self: name not in SKIP)


class Queue(RuleBasedStateMachine):
    """Logins on one schedule, waiting as src/queue.c waits: renewing every 2 s and at the
    slot, with what is left of max_wait."""
    backend = None
    count = 0

    @initialize()
    def setup(self):
        Queue.count += 1
        self.b = self.backend(Queue.count)
        self.model = Schedule()
        self.now, self.skew, self.n = T0, 0, 0
        self.forward = 0  # how far the server's clock has stepped forward in all
        self.epoch = 0  # resets so far
        self.top_skew = 0
        self.logins, self.admissions = [], []

    def teardown(self):
        if hasattr(self, 'b'):
            self.b.close()

    # -- one call, compared -------------------------------------------------------------
    def call(self, op, s, login=None, who='-', host='-'):
        pid = login.id if login else '%08x' % 0
        who, host = (login.who, login.host) if login else (who, host)
        # Every call takes a microsecond, as a real one takes more: the server's TIME
        # then moves on between calls, and the schedule's clock stays the observer's.
        self.now += 1
        server_now = self.now + self.skew
        got = self.b.call(op, server_now, s, pid, who, host)
        want = self.model.call(op, server_now, s, pid, who, host)
        n = len([x for x in got if x is not None])
        if COMPARE and got[:n] != want[:n]:
            raise Reply('%s %s at %.6f s: got %s, the model says %s' % (
                op, pid, (self.now - T0) / S, got, want))
        if COMPARE:
            held = self.b.members()
            self.same_leases(op, pid, leases_in(held))
            self.same_head(op, pid, stored_head(held))
        return got

    def same_leases(self, op, pid, got):
        """The lease ends the backend holds are the model's (L1)."""
        want = {p.id: p.lease for p in self.model.places}
        if not same_ends(got, want):
            raise Reply('%s %s at %.6f s: leases %s, the model says %s' % (
                op, pid, (self.now - T0) / S, sorted(got.items()), sorted(want.items())))

    def same_head(self, op, pid, got):
        """The head the backend stores is the model's, its settings included: a refused call
        writes the schedule's own back (rule (a))."""
        h = self.model.head
        want = h and (h.tat, h.at, h.off, h.interval, h.burst, h.admitted, h.asked)
        if got != want:
            raise Reply('%s %s at %.6f s: head %s, the model says %s' % (
                op, pid, (self.now - T0) / S, got, want))

    # -- the properties -------------------------------------------------------------------
    def admitted(self, login, at, told, blind=False):
        login.state = 'in'
        login.told = told
        fwd = login.fwd_told if blind else self.forward
        self.admissions.append((at, told[0], told[1], login, blind, fwd))
        self.check_spacing()
        self.check_order(login, at)
        if not login.stopped and not blind and at > login.limit:
            raise P4('%s admitted at %.6f, past begun+max_wait %.6f' % (
                login.id, (at - T0) / S, (login.limit - T0) / S))

    def check_spacing(self):
        """P1: admissions i < j (by time) are at least (j - i - burst + 1) * interval apart,
        with the loosest settings any of them was told, less how far the server's clock
        stepped forward between them (the schedule keeps time by it)."""
        a = sorted([x for x in self.admissions if x[4] != 'bound'], key=lambda x: x[0])
        for i in range(len(a)):
            tmin, bmax, flo, fhi = a[i][1], a[i][2], a[i][5], a[i][5]
            for j in range(i + 1, len(a)):
                tmin, bmax = min(tmin, a[j][1]), max(bmax, a[j][2])
                flo, fhi = min(flo, a[j][5]), max(fhi, a[j][5])
                eps = fhi - flo
                if a[j][0] - a[i][0] < (j - i - bmax + 1) * tmin - eps:
                    raise P1('%s at %.6f and %s at %.6f: %d admissions, interval '
                                    '%d burst %d' % (a[i][3].id, (a[i][0] - T0) / S, a[j][3].id,
                                                     (a[j][0] - T0) / S, j - i + 1, tmin, bmax))

    def held(self, login):
        """Renewed on time since it reserved, on one schedule (no reset), its lease never cut
        short by the server's clock stepping forward."""
        return not login.stopped and login.epoch_begun == self.epoch and \
            login.fwd_begun == self.forward

    def stayed(self, login):
        return self.held(login) and not login.retry

    def check_order(self, login, at):
        """P2: a login that reserved earlier and stayed goes in no later than one that
        reserved later (a retry aside), but for one renewal: with burst, a waiter whose slot
        came early learns it at its next renewal (L2: as far off as its last answer said)."""
        if not self.stayed(login):
            return
        for (bt, _, _, b, blind, _) in self.admissions:
            if not blind and not b.retry and b.begun > login.begun and at > bt + login.period:
                raise P2('%s (reserved %.6f) admitted at %.6f, after %s (reserved '
                                '%.6f) at %.6f' % (login.id, (login.begun - T0) / S,
                                                   (at - T0) / S, b.id, (b.begun - T0) / S,
                                                   (bt - T0) / S))

    def refused(self, login):
        login.state = 'out'
        if not self.stayed(login):
            return
        for (bt, _, _, b, blind, _) in self.admissions:
            if not blind and not b.retry and b.begun > login.begun:
                raise P2('%s refused at %.6f after %s, reserved later, went in' %
                                (login.id, (self.now - T0) / S, b.id))

    @invariant()
    def within_max_wait(self):
        """P4: a live login that renews on time is answered by begun + max_wait."""
        for l in self.logins:
            if l.state == 'wait' and not l.stopped and self.now > l.limit and \
                    l.next_call() > l.limit:
                raise P4('%s still waits at %.6f, past %.6f' % (
                    l.id, (self.now - T0) / S, (l.limit - T0) / S))

    def per_host(self, login):
        """P6: no host holds more than per_host places, ghosts included (as the model has
        them)."""
        k = login.s.per_host
        if k and login.host != '-':
            live = [l for l in self.logins if l.host == login.host and l.state == 'wait' and
                    self.held(l)]
            ghosts = self.model.ghosts_of(login.host) if COMPARE else 0
            if len(live) + ghosts > k:
                raise P6('host %s holds %d places and %d ghosts, per_host %d' % (
                    login.host, len(live), ghosts, k))

    # -- what logins do -----------------------------------------------------------------
    @rule(user=st.integers(1, 3), host=st.integers(0, 2), si=st.integers(0, len(SETTINGS) - 1))
    def reserve(self, user, host, si):
        s = SETTINGS[si]
        who = '%x%x' % (user, host)
        retry = any(l.who == who for l in self.logins)
        self.n += 1
        login = Login(self.n, who, 'e%x' % host if host else '-', s, self.now, retry)
        login.epoch = login.epoch_begun = self.epoch
        login.fwd_begun = login.fwd_told = self.forward
        self.logins.append(login)
        r = self.call('reserve', s, login)
        if r[0] in (1, 2) and (retry or r[3] is not None):
            self.moved_blind(r, retry)
        self.answered(login, r)
        if r[0] == 2:
            self.per_host(login)

    def moved_blind(self, r, retry):
        """A retry may take its place back ahead of a login gone blind, and stricter settings
        move its slot: it cannot learn, so P1 does not hold it to its old slot (a bound)."""
        self.admissions = [a[:4] + ('bound',) + a[5:] if a[4] is True and a[0] > self.now and
                           (retry or (a[1], a[2]) != (r[3], r[4])) else a
                           for a in self.admissions]

    def answered(self, login, r):
        told = (r[3] or login.s.interval, r[4] or login.s.burst)
        if r[0] == 1:
            self.admitted(login, self.now + r[1], told)
        elif r[0] == 2:
            login.state, login.last, login.deadline, login.told = \
                'wait', self.now, self.now + r[1], told
            login.fwd_told, login.epoch, login.pos = self.forward, self.epoch, r[2]
            login.fit(r[1], r[3] or 0)
        elif login.state == 'wait':  # its renewal refused it
            self.refused(login)
        else:
            login.state = 'out'

    def renew(self, login):
        left = max(login.limit - (self.now + 1), 0)  # at the call's own microsecond
        on_time = self.held(login) and login.epoch == self.epoch
        lost = len(self.model.lost)
        r = self.call('renew', Settings(login.s.interval, login.s.burst, left,
                                        login.s.per_host), login)
        if COMPARE and CADENCE == 'fit' and on_time and len(self.model.lost) > lost:
            raise L2('%s renewed on time at %.6f, %.3f s after its last answer, and found its '
                     'lease run out (%.3f s)' % (login.id, (self.now - T0) / S,
                                                 (self.now - login.last) / S, login.lease / S))
        self.answered(login, r)

    @invariant()
    def leases_fit(self):
        """L1: every place's lease ends before the slot it was told with it, unless that slot
        was at most LEASE off."""
        if not COMPARE or CADENCE != 'fit':
            return
        for p in self.model.places:
            if p.lease >= p.told and p.told - p.granted > LEASE:
                raise L1('%s: a lease to %.6f, past its slot %.6f told %.3f s ahead' % (
                    p.id, (p.lease - T0) / S, (p.told - T0) / S, (p.told - p.granted) / S))

    @rule(dt=st.integers(1, 8000))
    def advance(self, dt):
        """Time passes by dt ms; every waiter renews when src/queue.c would."""
        self.advance_to(self.now + dt * 1000)

    @rule(user=st.integers(1, 3), host=st.integers(0, 2), si=st.integers(0, len(SETTINGS) - 1))
    def reserve_after_lapse(self, user, host, si):
        """Time passes, as in advance, to 1 ms past the end of the first lease that no live
        login renews (killed, stopped, blind), and a login reserves: its call tidies that place,
        by the schedule's own settings whatever the login's, and if refused it has no say (rule
        (a), docs/MODEL.md). Not 1 us past: a lease's end is stored as a double, to 2 us."""
        live = {l.id for l in self.logins if l.state == 'wait' and not l.stopped}
        ends = [p.lease for p in self.model.places if p.id not in live]
        if ends:
            off = self.model.head.off if self.model.head else 0
            self.advance_to(max(min(ends) - self.skew - off + 1000, self.now))
            self.reserve(user, host, si)

    def advance_to(self, target):
        while True:
            waiting = [l for l in self.logins if l.state == 'wait']
            if not waiting:
                break
            login = min(waiting, key=Login.next_call)
            if login.next_call() > target:
                break
            self.now = max(self.now, login.next_call())
            self.renew(login)
        self.now = max(self.now, target)  # a renewal at target took its microsecond

    def pick(self, i):
        waiting = [l for l in self.logins if l.state == 'wait']
        return waiting[i % len(waiting)] if waiting else None

    @rule(i=st.integers(0, 9))
    @unless_skipped('hang_up')
    def hang_up(self, i):
        login = self.pick(i)
        if login:
            self.call('leave', login.s, login)
            login.state = 'gone'

    @rule(i=st.integers(0, 9))
    @unless_skipped('reserve_again')
    def reserve_again(self, i):
        """A waiter's reservation asked again with its own id, as a login whose first call
        timed out on a server that made it late asks (src/rslot.c), with what is left of its
        max_wait: the place it holds answers, as a renewal; it holds no second one."""
        login = self.pick(i)
        if login and not login.stopped:
            left = max(login.limit - (self.now + 1), 0)
            r = self.call('reserve', Settings(login.s.interval, login.s.burst, left,
                                              login.s.per_host), login)
            self.answered(login, r)
            if r[0] == 2:
                self.per_host(login)

    @rule(i=st.integers(0, 9))
    @unless_skipped('kill')
    def kill(self, i):
        login = self.pick(i)
        if login:
            login.state = 'killed'

    @rule(i=st.integers(0, 9), dt=st.integers(1, 12))
    @unless_skipped('stop')
    def stop(self, i, dt):
        """SIGSTOP for dt s, then SIGCONT."""
        login = self.pick(i)
        if login:
            login.stopped, login.stopped_until = True, self.now + dt * S

    @rule(i=st.integers(0, 9))
    @unless_skipped('blind')
    def blind(self, i):
        """The schedule cannot be reached from now on: the login goes in at its last slot
        (once it runs again, if stopped). P1 holds for it when it was first in line and goes
        in at its slot, within its lease (R5); else that is a bound, not checked
        (docs/MODEL.md, P1)."""
        login = self.pick(i)
        if login:
            at = max(login.deadline, self.now, login.stopped_until)
            checked = login.pos == 1 and at <= login.last + login.lease and \
                login.epoch == self.epoch and at == login.deadline
            self.admitted(login, at, login.told, blind=True if checked else 'bound')
            login.state = 'blind'

    @rule(si=st.integers(0, len(SETTINGS) - 1))
    def peek(self, si):
        r = self.call('peek', SETTINGS[si])
        # The schedule's clock stands behind by as far as the server's stepped back.
        lag = self.top_skew - self.skew
        held = sum(1 for l in self.logins if l.state in ('wait', 'killed', 'blind') and
                   l.last + l.lease > self.now - lag)
        later = [a for a in self.admissions if a[0] > self.now - lag]
        if any((a[1], a[2]) != (r[4], r[5]) for a in self.admissions):
            return  # stricter settings read the schedule's next slot anew
        if r[3] > held + len(later):
            raise P5('peek counts %d waiting, but only %d places can be held and %d '
                            'admitted later' % (r[3], held, len(later)))

    @rule(si=st.integers(0, len(SETTINGS) - 1), one_in=st.integers(0, 7))
    @unless_skipped('reset')
    def reset(self, si, one_in):
        if one_in == 0:
            self.call('reset', SETTINGS[si])
            self.admissions = []  # a reset starts the schedule afresh: a new history
            self.epoch += 1

    @unless_skipped('step_clock')
    @precondition(lambda self: self.backend is Redis)
    @rule(dt=st.integers(-40, 40))
    def step_clock(self, dt):
        """The server's clock steps (Redis: NTP, a failover); the file's never does."""
        if self.backend is not Redis:
            return
        self.skew += dt * S
        self.top_skew = max(self.top_skew, self.skew)
        self.forward += max(dt, 0) * S


# Minimal sequences the test found, replayed on both backends before the random runs (rule,
# arguments; si indexes the full SETTINGS).
REPLAYS = {
    # lqueue.c (the file's own copy of the rules, gone since): the second of two waiters cut
    # off at their slots was given up, and its slot went to a newcomer (found as P1; the
    # newcomer's reply differs from the model's).
    'two lapsed in a row': [
        ('reserve', dict(host=0, si=1, user=1)), ('reserve', dict(host=0, si=0, user=1)),
        ('advance', dict(dt=1000)), ('blind', dict(i=0)),
        ('reserve', dict(host=0, si=0, user=1)), ('blind', dict(i=0)),
        ('advance', dict(dt=5000)), ('reserve', dict(host=0, si=0, user=1))],
    # A waiter stopped past its lease takes its place back ahead of one that queued
    # meanwhile, which its renewal then refuses at its max_wait to the microsecond (P4).
    'stopped past its lease': [
        ('reserve', dict(host=0, si=3, user=1)), ('reserve', dict(host=0, si=0, user=1)),
        ('stop', dict(dt=6, i=0)), ('reserve', dict(host=0, si=0, user=1)),
        ('advance', dict(dt=3088)), ('advance', dict(dt=6913))],
    # A login stopped past its slot, then cut off, goes in blind late, while the schedule
    # counted it at its slot: a bound (P1), not a failure.
    'blind after a stop': [
        ('reserve', dict(host=0, si=1, user=1)), ('reserve', dict(host=0, si=3, user=1)),
        ('advance', dict(dt=1)), ('advance', dict(dt=2049)), ('advance', dict(dt=4258)),
        ('reserve', dict(host=0, si=0, user=1)), ('stop', dict(dt=5, i=0)),
        ('advance', dict(dt=4153)), ('blind', dict(i=0)), ('advance', dict(dt=2539)),
        ('reserve', dict(host=0, si=0, user=1))],
    # A ghost taken back ahead of a login that went blind at its old slot: a bound (P1).
    'ghost back ahead of a blind login': [
        ('reserve', dict(host=0, si=3, user=1)), ('reserve', dict(host=0, si=0, user=3)),
        ('blind', dict(i=0)), ('reserve', dict(host=0, si=0, user=1)),
        ('reserve', dict(host=0, si=2, user=1)), ('advance', dict(dt=2959)),
        ('advance', dict(dt=5042)), ('blind', dict(i=0)),
        ('reserve', dict(host=0, si=0, user=3)), ('blind', dict(i=0))],
    # Found on 138ddb0, the parent of issue 18's fixes (docs/MODEL.md, "Acceptance"):
    # a wait past max_wait: a stricter interval pushed a queued login back (P4),
    'max_wait': [('reserve', dict(host=0, si=s, user=1)) for s in (0, 3, 3, 0)] + [
        ('advance', dict(dt=1024)), ('advance', dict(dt=5192)), ('advance', dict(dt=5784))],
    # a caller's burst=4 going in ahead of a login queued on a burst=1 schedule (P2),
    'burst jumps the queue': [
        ('reserve', dict(host=0, si=1, user=2)), ('reserve', dict(host=1, si=0, user=1)),
        ('reserve', dict(host=0, si=2, user=1)), ('advance', dict(dt=2000))],
    # a lapsed place at its slot given to the next login while its own went in blind (P1),
    'blind at the slot': [('reserve', dict(host=0, si=1, user=1))] * 2 + [
        ('blind', dict(i=0)), ('advance', dict(dt=5000)),
        ('reserve', dict(host=0, si=1, user=1))],
    # logins that reserved after a clock step back went ahead, pushing one past max_wait (P4).
    'clock step back': [('reserve', dict(host=0, si=3, user=1))] * 2 + [
        ('step_clock', dict(dt=-1)), ('reserve', dict(host=0, si=3, user=1)),
        ('advance', dict(dt=3081)), ('advance', dict(dt=6920))],
    # A call 1 us before a lease's end as the model computed it: its score, a double, rounds
    # that end to 2 us, and the place had lapsed (model.py's in_band; found by model-long).
    'a lease ends as its score says': [
        ('reserve', dict(host=1, si=1, user=2)), ('reserve', dict(host=0, si=0, user=1)),
        ('reserve', dict(host=0, si=0, user=1)), ('stop', dict(dt=1, i=1)),
        ('reserve_after_lapse', dict(host=0, si=6, user=1)), ('stop', dict(dt=1, i=0)),
        ('reserve_after_lapse', dict(host=0, si=2, user=1)), ('stop', dict(dt=7, i=0)),
        ('reserve', dict(host=0, si=5, user=1)),
        ('reserve_after_lapse', dict(host=0, si=0, user=1)), ('stop', dict(dt=4, i=1)),
        ('reserve_after_lapse', dict(host=0, si=0, user=1))],
    # The test's own clock went back 1 us when a renewal fell at the end of an advance, and
    # the next login was admitted 1 us short of spacing (P1; found by model-long).
    'a renewal at the end of an advance': [
        ('reserve', dict(host=0, si=0, user=2)), ('reserve', dict(host=0, si=1, user=2)),
        ('reserve', dict(host=1, si=0, user=3)), ('reserve', dict(host=0, si=1, user=1)),
        ('stop', dict(dt=1, i=9)), ('reserve_after_lapse', dict(host=1, si=1, user=3)),
        ('reserve_after_lapse', dict(host=1, si=1, user=2)), ('stop', dict(dt=1, i=1)),
        ('reserve_after_lapse', dict(host=0, si=0, user=2))],
}


class Replay(unittest.TestCase):
    def replay(self, backend):
        global SETTINGS
        keep, SETTINGS = SETTINGS, FULL
        try:
            for name, steps in REPLAYS.items():
                m = type('Queue_' + backend.__name__, (Queue,), {'backend': backend})()
                m.setup()
                try:
                    for rule_name, kw in steps:
                        getattr(m, rule_name)(**kw)
                        m.within_max_wait()
                finally:
                    m.teardown()
        finally:
            SETTINGS = keep

    def test_redis(self):
        self.replay(Redis)

    @unittest.skipUnless('file' in BACKENDS, 'MODEL_BACKENDS names no file')
    def test_file(self):
        self.replay(File)


def call_both(case, b, model, op, at, s, pid, heard=0):
    """One call of login pid (WHO "w" + pid, no HOST) at T0 + at on the backend b, sending heard
    as ARGV[12], and on the model (which sends none); the backend's reply, the model's unless
    COMPARE is off."""
    got = b.call(op, T0 + at, s, pid, 'w' + pid, '-', heard)
    want = model.call(op, T0 + at, s, pid, 'w' + pid, '-')
    if COMPARE:
        case.assertEqual(got, want, '%s %s at %.3f s: the model says otherwise' % (
            op, pid, at / S))
    return got


class ResetHeard(unittest.TestCase):
    """A reset that hosts' memory cannot undo (issue 38, item 8). At interval=10m one login
    goes in; its host heard that the next slot is 600 s off. The schedule is reset a second
    later. 70 s on, past the minute and a lease that the reset's head used to stay, a login on
    that host reserves, sending what it heard (531 s to go), as src/rslot.c does: the key is
    still there, so the old next slot is not made again, and it goes in at once (before, the
    key had expired, and it was told 531 s and refused at max_wait). Once the erased slot and
    a minute and a lease have passed, the next write forgets the hold."""
    TEN = Settings(600 * S, 1, 60 * S, 0)

    def call(self, b, model, op, at, pid, heard=0):
        return call_both(self, b, model, op, at, self.TEN, pid, heard)

    def run_on(self, backend):
        b, model = backend('reset-heard'), Schedule()
        try:
            self.assertEqual(self.call(b, model, 'reserve', 1 * S, 'a1')[0], 1)
            self.call(b, model, 'reset', 2 * S, 'ctl')
            r = self.call(b, model, 'reserve', 70 * S, 'a2', heard=531 * S)
            self.assertEqual(r[:2], (1, 0), 'after a reset, what a host heard before it '
                             'does not hold the next login: %r' % (r,))
            # a2's slot came, 600 s on: a3 is admitted a second before the next slot (670 s),
            # past the hold (666 s), which its write forgets.
            r = self.call(b, model, 'reserve', 669 * S, 'a3')
            self.assertEqual(r[:2], (1, S), r)
            self.assertFalse([m for sc, m in b.members() if m.startswith('x:')],
                             'the hold is forgotten once it has passed')
        finally:
            b.close()

    def test_redis(self):
        self.run_on(Redis)

    @unittest.skipUnless('file' in BACKENDS, 'MODEL_BACKENDS names no file')
    def test_file(self):
        self.run_on(File)


def index(base, name):
    """An index member's score, as slot.lua's index(): -(base + 48 bits of name's SHA-1)."""
    return float(-(base + int(hashlib.sha1(name.encode()).hexdigest()[:12], 16)))


class Refused(unittest.TestCase):
    """A refused login, whatever its call tidies, never changes the stored interval, burst, or
    any place. A schedule at interval 2 s holds three waiters; one is killed after its renewal
    at 2 s. Once its lease has run out, a second stack's login (interval 30 s) is refused, by
    its max_wait of 5 s or by per_host 1, and its call tidies the lapsed place by the
    schedule's own settings: first in line, its slot come, it counts as admitted and moves tat
    on by 2 s (not 30 s); second in line, it leaves a ghost. The head keeps 2 s and burst 1,
    every other place and lease stays as it was, and the waiters still queue at 2 s at their
    next renewal (before the fix, the refused call wrote 30 s, and they were refused)."""
    A = Settings(2 * S, 1, 20 * S, 0)
    REFUSED_BY = {'max_wait': (Settings(30 * S, 1, 5 * S, 0), '-', 0),
                  'per_host': (Settings(30 * S, 1, 60 * S, 1), 'e1', 3)}

    def run_on(self, backend, killed, refused_by):
        b = backend('refused-%s-%s' % (killed, refused_by))
        model = Schedule()
        try:
            self.sequence(b, model, killed, *self.REFUSED_BY[refused_by])
        finally:
            b.close()

    def call(self, b, model, op, at, s, pid, who='-', host='-', compare=True):
        got = b.call(op, T0 + at, s, pid, who, host)
        want = model.call(op, T0 + at, s, pid, who, host)
        if compare:
            self.compare(b, model, op, pid, at, got, want)
        return got, want

    def compare(self, b, model, op, pid, at, got, want):
        """The reply and the leases are the model's (MODEL_COMPARE=0: not compared)."""
        if not COMPARE:
            return
        where = '%s %s at %.6f s' % (op, pid, at / S)
        self.assertEqual(got, want, where + ': the model says otherwise')
        got, want = b.leases(), {p.id: p.lease for p in model.places}
        self.assertTrue(same_ends(got, want), '%s: leases %s, the model says %s' % (
            where, sorted(got.items()), sorted(want.items())))

    def sequence(self, b, model, killed, s, host, verdict):
        logins = ['a%d' % i for i in range(1, 7)]  # a1, a2 go in at once; a3-a6 queue
        begun = {}
        for i, pid in enumerate(logins):
            begun[pid] = i + 1
            r, _ = self.call(b, model, 'reserve', begun[pid], self.A, pid, 'w' + pid, 'e1')
            self.assertEqual(r[0], 1 if i < 2 else 2, pid)
        live = logins[2:]
        gone = {'first': 'a4', 'second': 'a5'}[killed]
        for t in (2, 4, 6):
            for pid in list(live):
                at = t * S + begun[pid]
                left = self.A.max_wait - (at - begun[pid])
                r, _ = self.call(b, model, 'renew', at, Settings(2 * S, 1, left, 0), pid,
                                 'w' + pid, 'e1')
                self.assertIn(r[0], (1, 2), pid)
                if r[0] == 1:
                    live.remove(pid)
            if t == 2:
                live.remove(gone)  # killed: it renews no more, and its lease runs out at 7 s
        self.assertEqual(live, ['a5', 'a6'] if gone == 'a4' else ['a6'])  # a4 in at 6 s
        before = dict((m, sc) for sc, m in b.members())
        at = 7 * S + S // 2
        got, want = self.call(b, model, 'reserve', at, s, 'b1', 'wb1', host, compare=False)
        after = dict((m, sc) for sc, m in b.members())
        self.assertEqual(got[0], verdict)
        self.head_kept(before, after, gone, T0 + at)
        self.places_kept(before, after, gone)
        self.compare(b, model, 'reserve', 'b1', at, got, want)
        for pid in live:
            at = 8 * S + begun[pid]
            left = self.A.max_wait - (at - begun[pid])
            r, _ = self.call(b, model, 'renew', at, Settings(2 * S, 1, left, 0), pid, 'w' + pid,
                             'e1')
            self.assertIn(r[0], (1, 2), '%s refused at its renewal after the refusal' % pid)
            self.assertEqual(r[3:5], (2 * S, 1), '%s told other settings' % pid)

    def head_kept(self, before, after, gone, now):
        """The head at score 0: its settings as they were; tat moved on by the schedule's own
        interval if the lapsed place counted as admitted."""
        def head(members):
            heads = [m for m, sc in members.items() if sc == 0 and m.startswith('s:')]
            self.assertEqual(len(heads), 1, sorted(members))
            return [int(x) for x in heads[0].split(':')[1:]]
        (tat, _, off, interval, burst, admitted), new = head(before), head(after)
        self.assertEqual(new[3:5], [interval, burst], 'the stored interval and burst')
        if gone == 'a4':  # first in line, its slot (6 s) come within its lease (7 s)
            self.assertEqual(new, [tat + interval, now + off, off, interval, burst, now + off])
        else:
            self.assertEqual(new, [tat, now + off, off, interval, burst, admitted])

    def places_kept(self, before, after, gone):
        """Every member but the head is as it was, but the lapsed place's own (and, given up,
        its ghost)."""
        place = '%s:w%s:e1' % (gone, gone)
        want = {m: sc for m, sc in before.items() if not m.startswith('s:') and
                m not in ('w:' + place, 'l:' + place, 'h:e1:' + gone)}
        self.assertEqual(len(want), len(before) - 4)
        if gone == 'a5':  # second in line: a ghost, dated at its lease's end
            left = int(before['l:' + place]) - LEASE_BAND
            payload = 'w%s:%d:%d:e1:0' % (gone, before['w:' + place], left)
            want.update({'g:' + payload: float(GHOST_BAND + left + GHOST_LIFE),
                         'j:' + payload: index(2 ** 50, 'w' + gone),
                         'i:e1:w' + gone: index(2 ** 49, 'e1')})
        self.assertEqual({m: sc for m, sc in after.items() if not m.startswith('s:')}, want)

    def test_redis(self):
        for killed in ('first', 'second'):
            for refused_by in self.REFUSED_BY:
                with self.subTest(killed=killed, refused_by=refused_by):
                    self.run_on(Redis, killed, refused_by)

    @unittest.skipUnless('file' in BACKENDS, 'MODEL_BACKENDS names no file')
    def test_file(self):
        for killed in ('first', 'second'):
            for refused_by in self.REFUSED_BY:
                with self.subTest(killed=killed, refused_by=refused_by):
                    self.run_on(File, killed, refused_by)


class Follow(unittest.TestCase):
    """Settings that cannot lock everyone out (issue 29): a stricter setting holds only while
    reservations ask for it. One login at interval=20s goes in; a 2 s stack's login a second
    later is told the 20 s schedule; 61 s after the 20 s one asked, a 2 s login decides by its
    own, the next slot following the last admission by 2 s, not 20; a 20 s login then raises
    it again at once. And a reset means the settings of the logins after it: the reset keeps
    the head with its caller's (2 s), an old waiter's renewal (20 s) has no say, and the next
    2 s login is told 2 s."""
    SLOW, FAST = Settings(20 * S, 1, 60 * S, 0), Settings(2 * S, 1, 60 * S, 0)

    def call(self, b, model, op, at, s, pid):
        return call_both(self, b, model, op, at, s, pid)

    def sequence(self, b, model):
        slow, fast = self.SLOW, self.FAST
        self.assertEqual(self.call(b, model, 'reserve', 1 * S, slow, 'a1')[0], 1)
        r = self.call(b, model, 'reserve', 2 * S, fast, 'a2')
        self.assertEqual((r[0], r[3]), (2, 20 * S), 'within a minute the 20 s schedule decides')
        self.assertGreater(r[1], 18 * S)
        self.call(b, model, 'leave', 3 * S, fast, 'a2')
        r = self.call(b, model, 'reserve', 62 * S, fast, 'a3')
        self.assertEqual((r[0], r[1], r[3]), (1, 0, 2 * S), '61 s on, the 2 s login decides')
        r = self.call(b, model, 'reserve', 62 * S + S // 2, fast, 'a4')  # in the window
        self.assertEqual((r[0], r[1], r[3]), (1, 3 * S // 2, 2 * S), 'the next slot follows')
        r = self.call(b, model, 'reserve', 63 * S, slow, 'a5')  # 2 s after a4, 20 s after it
        self.assertEqual((r[0], r[1], r[3]), (2, 3 * S, 20 * S), 'a stricter one raises it')
        # The reset: a5 renews with its 20 s after it; a 2 s login after that is told 2 s.
        self.call(b, model, 'reset', 70 * S, fast, 'ctl')
        r = self.call(b, model, 'renew', 71 * S, slow, 'a5')
        self.assertEqual((r[0], r[3]), (1, 2 * S), 'the old waiter goes in on the reset schedule')
        r = self.call(b, model, 'reserve', 71 * S + S // 2, fast, 'a6')
        self.assertEqual((r[0], r[1], r[3]), (1, 3 * S // 2, 2 * S),
                         'after a reset, the settings of the logins that come after it')

    def run_on(self, backend):
        b = backend('follow')
        try:
            self.sequence(b, Schedule())
        finally:
            b.close()

    def test_redis(self):
        self.run_on(Redis)

    @unittest.skipUnless('file' in BACKENDS, 'MODEL_BACKENDS names no file')
    def test_file(self):
        self.run_on(File)


def suite(names):
    examples = int(os.environ.get('MODEL_EXAMPLES', '500'))
    rnd = os.environ.get('MODEL_SEED')
    steps = int(os.environ.get('MODEL_STEPS', '40'))
    cfg = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                   derandomize=rnd is None, print_blob=True,
                   suppress_health_check=list(HealthCheck))
    cases = [unittest.defaultTestLoader.loadTestsFromTestCase(c)
             for c in (Refused, Replay, Follow, ResetHeard) if not names or c.__name__ in names]
    for name in BACKENDS:
        if names and 'Queue_' + name not in names:
            continue
        machine = type('Queue_' + name, (Queue,), {'backend': {'redis': Redis,
                                                                'file': File}[name]})
        case = machine.TestCase
        case.settings = cfg
        if rnd is not None:
            case.runTest = seed(int(rnd))(case.runTest)
        cases.append(unittest.defaultTestLoader.loadTestsFromTestCase(case))
    return unittest.TestSuite(cases)


if __name__ == '__main__':
    # Stopped by pid (timeout, make's SIGTERM): still stop the redis-server we started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        Redis.start()
        ok = unittest.TextTestRunner(verbosity=2).run(suite(sys.argv[1:])).wasSuccessful()
    finally:
        Redis.stop()
    sys.exit(0 if ok else 1)
