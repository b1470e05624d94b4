# SPDX-License-Identifier: BSD-3-Clause
"""The schedule's rules as plain Python (docs/MODEL.md): a list of places and a dict of
ghosts, the reference the randomized test (tests/model/test_model.py) holds both backends to.

Times are microseconds. A call answers as src/slot.lua does: (verdict, wait, position,
interval, burst), and peek and reset (verdict, wait, position, waiting, interval, burst).
Verdicts: 1 admitted, 2 queued, 0 refused (max_wait), 3 refused (per_host)."""
from dataclasses import dataclass, field
from math import ceil


@dataclass(frozen=True)
class Settings:
    """A caller's settings, as its stack has them."""
    interval: int
    burst: int
    max_wait: int
    per_host: int

LEASE = 5_000_000  # near its turn (SLOT_LEASE_US), ARGV[10]
RENEW = 2_000_000  # near its turn (SLOT_RENEW_US)
RENEW_MAX = 60_000_000  # SLOT_RENEW_MAX_US
WINDOW = 2_000_000
GHOST_LIFE = 60_000_000
GHOSTS_PER_HOST = 16
GHOSTS_MAX = 1024


def renew_for(wait, interval):
    """When a waiter told a slot wait off, on a schedule of interval, renews, from its call
    (docs/MODEL.md, Leases; slot_renew_us, slot.lua's lease_for): every RENEW near its turn,
    else a quarter of the wait, RENEW to RENEW_MAX."""
    if interval <= 0 or wait <= 2 * interval + WINDOW:  # not named: the near cadence
        return RENEW
    return min(max(wait // 4, RENEW), RENEW_MAX)


def lease_for(wait, interval):
    """The lease granted with that answer: the renewal and the near lease's margin (L1)."""
    return renew_for(wait, interval) + LEASE - RENEW


@dataclass
class Place:
    id: str
    who: str
    host: str
    arrival: int
    lease: int
    taken: bool = False  # taken back from a ghost
    granted: int = 0  # when its lease was granted, and the slot it was told then (L1)
    told: int = 0


@dataclass
class Ghost:
    who: str
    host: str
    arrival: int
    left: int


@dataclass
class Head:
    """The schedule as stored: the next admission, the schedule's clock at the last write and
    its offset from the server's (Redis), its own settings, the last admission."""
    tat: int
    at: int
    off: int = 0
    interval: int = 0
    burst: int = 0
    admitted: int = 0


@dataclass
class Call:
    """One call's working state: the schedule's clock and settings, and whether it writes."""
    now: int
    tat: int  # as stored, not brought up to now
    interval: int
    burst: int
    admitted: int = 0
    at: int = 0  # the file: when the last admission was written
    off: int = 0  # Redis: the schedule's clock less the server's
    file: bool = False
    changed: bool = False

    def stored_tat(self):
        """The file reads a tat older than its last admission as now (lqueue_stored_tat)."""
        if self.file and self.tat < (self.at if self.at > 0 else self.now):
            return self.now
        return self.tat

    def start_of(self, rank):
        return max(max(self.tat, self.now) + (rank - self.burst + 1) * self.interval, self.now)

    def position(self, rank):
        first, pending = self.start_of(0), 0
        if first > self.now:
            pending = ceil((first - self.now) / self.interval) - 1
        return rank + 1 + pending

    def due(self, rank, start):
        return start - self.now <= WINDOW and (rank == 0 or start == self.now)

    def admit(self, at):
        self.tat = max(self.stored_tat(), at) + self.interval
        self.admitted = self.at = self.now
        self.changed = True


@dataclass
class Schedule:
    """One key's schedule. file: the per-host file's (CLOCK_MONOTONIC, no expiry, and the
    corners where lqueue.c differs from slot.lua, docs/MODEL.md "Where the backends differ")."""
    file: bool = False
    head: Head = None
    places: list = field(default_factory=list)
    ghosts: dict = field(default_factory=dict)
    expires: int = None  # server time the Redis key expires at
    lost: list = field(default_factory=list)  # renewals that found their place gone (L2)

    def wipe(self):
        self.head, self.places, self.ghosts, self.expires = None, [], {}, None

    # -- the clock and the settings ---------------------------------------------------------
    def begin(self, server_now, s):
        """The call's clock and settings, before the purge."""
        if not self.file and self.expires is not None and server_now >= self.expires:
            self.wipe()
        h = self.head
        off = h.off if h else 0
        now = server_now + off
        if h and not self.file and now <= h.at:  # one clock per schedule: never behind
            off += h.at + 1 - now
            now = h.at + 1
        c = Call(now=now, tat=h.tat if h else (0 if self.file else now), interval=s.interval,
                 burst=s.burst, admitted=h.admitted if h else 0, at=h.at if h else 0,
                 off=off, file=self.file)
        if h and h.interval:
            c.interval, c.burst = max(c.interval, h.interval), min(c.burst, h.burst)
        return c

    def afresh_if_empty(self, c, s):
        """The file: a schedule with nothing left is made afresh by this caller's settings."""
        if self.file and not self.places and not self.ghosts and c.stored_tat() <= c.now:
            c.interval, c.burst = s.interval, s.burst
        if self.file and (self.head is None or (self.head.interval, self.head.burst) !=
                          (c.interval, c.burst)):
            c.changed = True

    # -- ghosts ---------------------------------------------------------------------------
    def ghosts_of(self, host):
        return sum(1 for g in self.ghosts.values() if g.host == host)

    def make_ghost(self, p, left):
        self.ghosts.pop(p.who, None)
        if p.who == '-' or len(self.ghosts) >= GHOSTS_MAX:
            return
        if p.host != '-' and self.ghosts_of(p.host) >= GHOSTS_PER_HOST:
            return
        self.ghosts[p.who] = Ghost(p.who, p.host, p.arrival, left)

    def give_up(self, c, p, left):
        """A place goes, given up at left: a ghost for its retry, unless it was taken back
        already."""
        self.places.remove(p)
        c.changed = True
        if not p.taken:
            self.make_ghost(p, left)

    def arrival_back(self, c, g):
        """A ghost's arrival, if nobody queued since it left; else the back."""
        if g and not any(p.arrival >= g.left for p in self.places):
            return g.arrival
        return c.now

    # -- the purge: forgotten ghosts, lapsed places ---------------------------------------
    def rank(self, arrival):
        return sum(1 for p in self.places if p.arrival < arrival)

    def purge(self, c, op, pid):
        """Ghosts past their time go; so do lapsed places (not the caller's own, which is
        renewing or leaving), in arrival order: one first in line whose slot came within its
        lease counts as admitted at it (R5), any other leaves a ghost."""
        for who in [w for w, g in self.ghosts.items() if g.left + GHOST_LIFE <= c.now]:
            del self.ghosts[who]
            c.changed = True
        lapsed = [p for p in self.places if p.lease <= c.now and (p.id != pid or op == 'reserve')]
        for p in sorted(lapsed, key=lambda p: p.arrival):
            if self.rank(p.arrival) == 0 and \
                    c.stored_tat() - (c.burst - 1) * c.interval <= p.lease:
                self.places.remove(p)
                self.admit_lapsed(c)
            else:
                self.give_up(c, p, p.lease)

    def admit_lapsed(self, c):
        if self.file:  # lqueue_left_admitted: never dated past its tat
            c.tat = c.stored_tat() + c.interval
            c.admitted, c.at, c.changed = c.now, min(c.now, c.tat), True
        else:
            c.admit(0)

    # -- the operations ---------------------------------------------------------------------
    def call(self, op, server_now, s, pid, who, host):
        """s: the caller's settings (interval, burst, max_wait, per_host)."""
        c = self.begin(server_now, s)
        if op in ('peek', 'reset') and not self.file:
            return self.view(c, op, s, [p for p in self.places if p.lease > c.now])
        self.purge(c, op, pid)
        self.afresh_if_empty(c, s)
        if op in ('peek', 'reset'):
            r = self.view(c, op, s, self.places)
        else:
            r = getattr(self, op)(c, s, pid, who, host)
        self.save(c, server_now)
        return r

    def view(self, c, op, s, live):
        start = c.start_of(len(live))
        v = 0 if start - c.now > s.max_wait else 1 if c.due(len(live), start) else 2
        r = (v, start - c.now, c.position(len(live)), len(live) + c.position(0) - 1,
             c.interval, c.burst)
        if op == 'reset':
            self.wipe()
            c.changed = False
            c.tat = c.at = 0
        return r

    def reply(self, c, v, start, rank):
        return (v, start - c.now, c.position(rank), c.interval, c.burst)

    def leave(self, c, s, pid, who, host):
        c.changed = c.changed or not self.file  # slot.lua writes, its place there or not
        for p in [p for p in self.places if p.id == pid]:
            self.give_up(c, p, c.now)
        return (1, 0, 1, c.interval, c.burst)

    def reserve(self, c, s, pid, who, host):
        g = self.ghosts.get(who) if who != '-' else None
        if s.per_host > 0 and host != '-':
            own = 1 if g and (g.host == host or self.file) else 0
            held = sum(1 for p in self.places if p.host == host) + self.ghosts_of(host)
            if held - own >= s.per_host:
                return self.reply(c, 3, c.now, self.rank(c.now + (0 if self.file else 1)))
        arrival = self.arrival_back(c, g)
        rank = self.rank(arrival)
        start = c.start_of(rank)
        if start - c.now > s.max_wait:
            return self.reply(c, 0, start, rank)
        if g:
            del self.ghosts[who]
            c.changed = True
        if c.due(rank, start):
            r = self.reply(c, 1, start, rank)
            c.admit(c.now)
            return r
        self.places.append(Place(pid, who, host, arrival,
                                 c.now + lease_for(start - c.now, c.interval), g is not None,
                                 c.now, start))
        c.changed = True
        return self.reply(c, 2, start, rank)

    def renew(self, c, s, pid, who, host):
        me = next((p for p in self.places if p.id == pid), None)
        if not me:  # its place went while it lived (lapsed, or a reset): its ghost, or the back
            self.lost.append(pid)
            g = self.ghosts.pop(who, None) if who != '-' else None
            me = Place(pid, who, host, self.arrival_back(c, g), 0, g is not None)
            self.places.append(me)
        c.changed = True
        rank = self.rank(me.arrival)
        start = c.start_of(rank)
        me.lease = c.now + lease_for(start - c.now, c.interval)
        me.granted, me.told = c.now, start
        if start - c.now > s.max_wait:
            self.places.remove(me)
            return self.reply(c, 0, start, rank)
        if c.due(rank, start):
            r = self.reply(c, 1, start, rank)
            c.admit(c.now)
            self.places.remove(me)
            return r
        return self.reply(c, 2, start, rank)

    # -- writing it back ------------------------------------------------------------------
    def save(self, c, server_now):
        if self.file:
            if c.changed:
                self.head = Head(c.tat, c.at, 0, c.interval, c.burst, c.admitted)
            return
        tat = max(c.tat, c.now)
        last = tat + len(self.places) * c.interval
        last = max([last] + [p.lease for p in self.places] +
                   [g.left + GHOST_LIFE for g in self.ghosts.values()])
        if last <= c.now:
            self.wipe()
            return
        if c.changed:
            self.head = Head(tat, c.now, c.off, c.interval, c.burst, c.admitted)
            self.expires = server_now + 1000 * ceil((last - c.now) / 1000)

