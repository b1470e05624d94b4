# SPDX-License-Identifier: BSD-3-Clause
"""The schedule's rules as plain Python (docs/MODEL.md): a list of places and a dict of
ghosts, the reference the randomized test (tests/model/test_model.py) holds both stores to.
Both run src/slot.lua, so one model serves both: Redis, and the per-host file's store.

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
# The score bands of the leases and the ghosts (slot.lua's LEASE and GHOST).
LEASE_BAND, GHOST_BAND = 1e16, 2e16
GHOSTS_PER_HOST = 16
GHOSTS_MAX = 1024
ASKED_FOR = 60_000_000  # stricter settings hold this long after a reservation asked for them


def renew_for(wait, interval):
    """When a waiter told a slot wait off, on a schedule of interval, renews, from its call
    (docs/MODEL.md, Leases; slot_renew_us, slot.lua's lease_for): every RENEW near its turn,
    else a quarter of the wait, RENEW to RENEW_MAX."""
    if interval <= 0 or wait <= 2 * interval + WINDOW:  # not named: the near cadence
        return RENEW
    return min(max(wait // 4, RENEW), RENEW_MAX)


def in_band(band, *terms):
    """A time as a score in band keeps it, less band: band + terms added left to right in
    doubles, as slot.lua adds them and the store keeps them (2 us apart past 2^53, 4 past
    2^54)."""
    x = band
    for t in terms:
        x += t
    return int(x) - int(band)


def lease_for(wait, interval):
    """The lease granted with that answer: the renewal and the near lease's margin (L1)."""
    return renew_for(wait, interval) + LEASE - RENEW


@dataclass
class Place:
    id: str
    who: str
    host: str
    arrival: int
    lease: int  # its end, as its score keeps it (in_band)
    taken: bool = False  # taken back from a ghost
    granted: int = 0  # when its lease was granted, and the slot it was told then (L1)
    told: int = 0


@dataclass
class Ghost:
    who: str
    host: str
    arrival: int
    left: int

    def end(self):
        """When it is forgotten, as its score keeps it."""
        return in_band(GHOST_BAND, self.left, GHOST_LIFE)


@dataclass
class Head:
    """The schedule as stored: the next admission, the schedule's clock at the last write and
    its offset from the server's TIME, its own settings, the last admission."""
    tat: int
    at: int
    off: int = 0
    interval: int = 0
    burst: int = 0
    admitted: int = 0
    asked: int = 0  # when a reservation last asked for these settings or stricter (0: never)


@dataclass
class Call:
    """One call's working state: the schedule's clock, its own settings and the strictest of
    them and the caller's, and whether it writes."""
    now: int
    tat: int  # as stored, not brought up to now
    interval: int  # the strictest of the schedule's and the caller's: they decide
    burst: int
    own_interval: int  # the schedule's own (the caller's, for one that has none): they tidy
    own_burst: int
    admitted: int = 0
    off: int = 0  # the schedule's clock less the server's
    changed: bool = False
    asks: bool = False  # a reservation that asks for its settings: kept, with when
    shift: int = 0  # the next slot moved by settings that follow a looser caller

    def follow(self, sign):
        self.tat += sign * self.shift

    def start_of(self, rank):
        return max(max(self.tat, self.now) + (rank - self.burst + 1) * self.interval, self.now)

    def position(self, rank):
        first, pending = self.start_of(0), 0
        if first > self.now:
            pending = ceil((first - self.now) / self.interval) - 1
        return rank + 1 + pending

    def due(self, rank, start):
        return start - self.now <= WINDOW and (rank == 0 or start == self.now)

    def admit(self, at, step):
        """One login goes in at at: the schedule moves on by step, one interval."""
        self.tat = max(self.tat, at) + step
        self.admitted = self.now
        self.changed = True


@dataclass
class Schedule:
    """One key's schedule, on Redis or in the per-host file: the same script runs on both."""
    head: Head = None
    places: list = field(default_factory=list)
    ghosts: dict = field(default_factory=dict)
    expires: int = None  # server time the key expires at
    hold: int = 0  # a reset keeps the key until then, on the schedule's clock (0: none)
    lost: list = field(default_factory=list)  # renewals that found their place gone (L2)

    def wipe(self):
        self.head, self.places, self.ghosts, self.expires, self.hold = None, [], {}, None, 0

    # -- the clock and the settings ---------------------------------------------------------
    def begin(self, server_now, s, op):
        """The call's clock and settings, before the purge. A renewal and a leave have no
        say; a reservation (and peek) asking for settings at least as strict is decided by
        them, a looser one by the strictest of both while the schedule's were asked for
        within ASKED_FOR, and by its own after that, the next slot following."""
        if self.expires is not None and server_now >= self.expires:
            self.wipe()
        h = self.head
        off = h.off if h else 0
        now = server_now + off
        if h and now <= h.at:  # one clock per schedule: never behind
            off += h.at + 1 - now
            now = h.at + 1
        own = (h.interval, h.burst) if h else (s.interval, s.burst)
        c = Call(now=now, tat=h.tat if h else now, interval=own[0], burst=own[1],
                 own_interval=own[0], own_burst=own[1], admitted=h.admitted if h else 0,
                 off=off)
        if op in ('reserve', 'peek'):
            if s.interval >= own[0] and s.burst <= own[1]:
                c.interval, c.burst, c.asks = s.interval, s.burst, True
            elif now - (h.asked if h else 0) >= ASKED_FOR:
                c.interval, c.burst, c.asks = s.interval, s.burst, True
                c.shift = min(s.interval - own[0], 0)
            else:
                c.interval, c.burst = max(s.interval, own[0]), min(s.burst, own[1])
        return c

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
        lease counts as admitted at it (R5), any other leaves a ghost. The schedule's own
        settings decide that, not the caller's: a caller that is refused has no say."""
        for who in [w for w, g in self.ghosts.items() if g.end() <= in_band(GHOST_BAND, c.now)]:
            del self.ghosts[who]
            c.changed = True
        ended = in_band(LEASE_BAND, c.now)
        lapsed = [p for p in self.places if p.lease <= ended and (p.id != pid or op == 'reserve')]
        for p in sorted(lapsed, key=lambda p: p.arrival):
            if self.rank(p.arrival) == 0 and \
                    c.tat - (c.own_burst - 1) * c.own_interval <= p.lease:
                self.places.remove(p)
                c.admit(0, c.own_interval)
            else:
                self.give_up(c, p, p.lease)

    # -- the operations ---------------------------------------------------------------------
    def call(self, op, server_now, s, pid, who, host):
        """s: the caller's settings (interval, burst, max_wait, per_host)."""
        c = self.begin(server_now, s, op)
        if op in ('peek', 'reset'):
            c.follow(1)
            ended = in_band(LEASE_BAND, c.now)
            return self.view(c, op, s, [p for p in self.places if p.lease > ended], server_now)
        self.purge(c, op, pid)
        c.follow(1)
        r = getattr(self, op)(c, s, pid, who, host)
        self.save(c, server_now, r[0])
        return r

    def view(self, c, op, s, live, server_now):
        """peek and reset: what a login now would get; nothing written but reset's. A reset
        keeps the head, its next slot now, with the caller's settings and none asked for, and
        the key until the next slot it erased has passed and a minute and a lease after: so its
        waiters, renewing, find a schedule that was not lost, and no host's memory of the old
        next slot outlives the key."""
        start = c.start_of(len(live))
        v = 0 if start - c.now > s.max_wait else 1 if c.due(len(live), start) else 2
        r = (v, start - c.now, c.position(len(live)), len(live) + c.position(0) - 1,
             c.interval, c.burst)
        if op == 'reset' and self.head:
            self.places, self.ghosts = [], {}
            self.hold = max(max(c.tat - c.shift, c.now) + RENEW_MAX + LEASE, self.hold)
            self.head = Head(c.now, c.now, c.off, s.interval, s.burst, 0, 0)
            self.expires = server_now + 1000 * ceil((self.hold - c.now) / 1000)
        return r

    def reply(self, c, v, start, rank):
        return (v, start - c.now, c.position(rank), c.interval, c.burst)

    def leave(self, c, s, pid, who, host):
        c.changed = True  # slot.lua writes, its place there or not
        for p in [p for p in self.places if p.id == pid]:
            self.give_up(c, p, c.now)
        return (1, 0, 1, c.interval, c.burst)

    def reserve(self, c, s, pid, who, host):
        if any(p.id == pid for p in self.places):  # asked again: the place it made, renewed
            return self.renew(c, s, pid, who, host)
        g = self.ghosts.get(who) if who != '-' else None
        if s.per_host > 0 and host != '-':
            own = 1 if g and g.host == host else 0
            held = sum(1 for p in self.places if p.host == host) + self.ghosts_of(host)
            if held - own >= s.per_host:
                return self.reply(c, 3, c.now, len(self.places))
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
            c.admit(c.now, c.interval)
            return r
        self.places.append(Place(pid, who, host, arrival,
                                 in_band(LEASE_BAND, c.now, lease_for(start - c.now, c.interval)),
                                 g is not None,
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
        me.lease = in_band(LEASE_BAND, c.now, lease_for(start - c.now, c.interval))
        me.granted, me.told = c.now, start
        if start - c.now > s.max_wait:
            self.places.remove(me)
            return self.reply(c, 0, start, rank)
        if c.due(rank, start):
            r = self.reply(c, 1, start, rank)
            c.admit(c.now, c.interval)
            self.places.remove(me)
            return r
        return self.reply(c, 2, start, rank)

    # -- writing it back ------------------------------------------------------------------
    def save(self, c, server_now, verdict):
        """The head and the key's expiry, when the call changed anything. A refused caller
        (0, 3) has no say: the schedule keeps its own settings."""
        if verdict in (0, 3):
            c.interval, c.burst, c.asks = c.own_interval, c.own_burst, False
            c.follow(-1)
        tat = max(c.tat, c.now)
        last = tat + len(self.places) * c.interval
        last = max([last] + [p.lease for p in self.places] +
                   [g.end() for g in self.ghosts.values()])
        if self.hold > c.now:  # a reset's hold, kept while it lasts
            last = max(last, self.hold)
        elif last > c.now and c.changed:
            self.hold = 0
        if last <= c.now:
            self.wipe()
            return
        if c.changed:
            asked = c.now if c.asks else self.head.asked if self.head else 0
            self.head = Head(tat, c.now, c.off, c.interval, c.burst, c.admitted, asked)
            self.expires = server_now + 1000 * ceil((last - c.now) / 1000)
