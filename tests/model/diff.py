# SPDX-License-Identifier: BSD-3-Clause
"""The per-host file's store against Redis: the same random calls (reserve, renew, leave, peek,
reset; places that stop renewing, clock steps either way, bad arguments, garbage members put in
directly) through src/slot.lua on a redis-server of the test's own (EVALSHA, on the test's clock:
tests/model/clock.sed) and through the store that runs it (src/lscript.c on src/lstore.c, by
build/model/lsdrive). After every call the reply, every member and score of the key and its
expiry must be the same: Redis is the reference, so a difference is the store's bug (or the
clock's emulation here). One driver process per sequence, on its own key.

Environment: DIFF_SEQUENCES (2000), DIFF_STEPS (the most calls of a plain sequence, 30), DIFF_SEED
(1; each sequence has a generator of its own from it and its number, so that DIFF_ONLY=N runs
sequence N alone), DIFF_BIG (every so many sequences one is big, from sequence 0; 0 for none),
DIFF_JOBS (the CPUs), DIFF_LUA and DIFF_DRIVER (under build/model), DIFF_TIMEOUT (the most
seconds a sequence may take, 120, and the run: DIFF_SEQUENCES of them / 10, at least 600). A
sequence past its time fails, named with its calls, and so does a run past its time: a hang is
a failure, never a wait for CI's own limit. The last line is "diff: N passed, M failed"."""
import collections
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import redis

TREE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LUA = os.environ.get('DIFF_LUA', os.path.join(TREE, 'build/model/slot_clock.lua'))
DRIVER = os.environ.get('DIFF_DRIVER', os.path.join(TREE, 'build/model/lsdrive'))
S = 1_000_000
LEASE, GHOST = 10 ** 16, 2 * 10 ** 16
# interval, burst
SETTINGS = [(1 * S, 1), (3 * S, 1), (1 * S, 4), (2 * S, 2), (1, 1), (100000, 3), (60 * S, 1)]
MAX_WAITS = [0, 5 * S, 12 * S, 60 * S, 3600 * S]
WINDOWS = [2 * S, 0, -1]
STEPS = [0, 1, 10, 1000, 100000, S, 2 * S]
LONG_STEPS = [5 * S, 30 * S, 70 * S, 600 * S]
BACK_STEPS = [-1, -S, -5 * S, -40 * S, -86400 * S]
# One argument made bad, by its index in ARGV (1-based), and what it becomes.
BAD = [(1, 'bogus'), (1, ''), (2, '0'), (2, '1.5'), (2, 'x'), (2, '-5'), (3, '0'), (3, '2.5'),
       (4, '-1'), (4, 'inf'), (5, '0.5'), (5, 'x'), (6, ''), (6, 'a:b'), (6, 'a b'), (7, 'a:b'),
       (8, '!!'), (9, '0.5'), (9, ''), (10, '0'), (10, 'nan'), (11, '-2'), (11, '1.5'),
       (12, '-1'), (12, '0.5'), (13, 'x'), (13, '-3'), (14, '-1'), (14, '0.5'), (14, 'x')]
# ARGV[12] and [13]: mostly none, as most calls find their schedule.
HEARD = [0, 0, 0, 1, S, 3 * S, 10 ** 15]
AGES = [0, 0, 0, 1, S, 30 * S, 10 ** 15]
# ARGV[14]: mostly none, as only a fallback from Redis sends one.
FLOORS = [0, 0, 0, 0, 1, S, 5 * S, 10 ** 15]
# Odd but good: Lua reads them as the numbers they spell.
ODD = [(2, '1e6'), (2, ' 2000000'), (3, '0x2'), (4, '60e6'), (9, '1.0'), (11, '2e6')]


def hexid(rnd, n):
    return ''.join(rnd.choice('0123456789abcdef') for _ in range(n))


class Server:
    """A redis-server of our own on a unix socket in a temporary directory, stopped by pid."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='flowslot-diff.')
        self.sock = sock = os.path.join(self.dir, 'redis.sock')
        self.proc = subprocess.Popen(['redis-server', '--port', '0', '--unixsocket', sock,
                                      '--save', '', '--appendonly', 'no', '--dir', self.dir],
                                     stdout=subprocess.DEVNULL)
        self.r = redis.Redis(unix_socket_path=sock, decode_responses=True, socket_timeout=10)
        for _ in range(200):
            try:
                self.r.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError('redis-server did not answer')

    def stop(self):
        self.proc.terminate()  # by pid: Popen knows it
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # busy in a script: SIGTERM waits for it
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def error_text(msg):
    """An error as both sides can be compared: without Redis's "ERR " (which redis-py strips)
    and the " script: ..." that Redis 7.0 adds to a script's error."""
    msg = msg.split(' script: ')[0]
    return msg[4:] if msg.startswith('ERR ') else msg


def score_text(score):
    """A score as both sides can be compared. Garbage put in at -0 is 0 in a small key (a
    listpack keeps it as the integer 0) and -0 in a large one (a skiplist keeps the double):
    which one Redis has is its encoding's, not a rule's; slot.lua never writes -0."""
    return '0' if score == '-0' else score


def clock_us(expires_us):
    """An expiry as tests/model/clock.sed writes it: the script adds its milliseconds to the
    time as Lua numbers, so that past 2^53 (from garbage far in the lease or ghost band) the
    sum is rounded to a double. Real Redis adds integers, as the store does."""
    return int(float(expires_us))


class Reference:
    """The key on Redis, on the test's clock: KEY:expires stands for its expiry. Each call is one
    round trip: the expiry, the call, and the key read back, pipelined."""
    # Before each call: a key whose expiry has come is gone, and so is a lone KEY:expires.
    EXPIRE = """local e = redis.call('GET', KEYS[2])
if e and (tonumber(ARGV[1]) >= tonumber(e) or redis.call('EXISTS', KEYS[1]) == 0) then
  redis.call('DEL', KEYS[1], KEYS[2])
end"""

    def __init__(self, r, sha, key):
        self.r, self.sha, self.key = r, sha, key
        self.exp = key + ':expires'

    def call(self, call):
        p = self.r.pipeline(transaction=False)
        p.eval(self.EXPIRE, 2, self.key, self.exp, call[1])
        if call[0] == 'eval':
            p.evalsha(self.sha, 1, self.key, *call[3:], call[1])
        else:
            p.execute_command('ZADD', self.key, call[2], call[3])
        p.execute_command('ZRANGE', self.key, 0, -1, 'WITHSCORES')
        p.get(self.exp)
        pre, reply, flat, exp = p.execute(raise_on_error=False)
        if isinstance(pre, Exception):
            raise pre
        if isinstance(reply, redis.ResponseError):
            reply = ('err', error_text(str(reply)))
        elif isinstance(reply, list):
            reply = ('ok', [int(x) for x in reply])
        else:
            reply = ('ok', [int(reply)])
        if not flat:  # no key: a sorted set is never empty
            return reply, (0, [])
        return reply, (int(exp or 0),
                       [(score_text(flat[i + 1]), flat[i]) for i in range(0, len(flat), 2)])

    def drop(self):
        self.r.delete(self.key, self.exp)


class Store:
    """The same key in the store, through build/model/lsdrive (its header has the protocol)."""

    def __init__(self):
        self.p = subprocess.Popen([DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)

    def send(self, fields):
        """Sends a call, and lets the driver work on it while Redis does (see receive)."""
        try:
            self.p.stdin.write('\t'.join(str(f) for f in fields) + '\n')
            self.p.stdin.flush()
        except BrokenPipeError:
            raise RuntimeError('lsdrive stopped (status %s)' % self.p.wait())

    def receive(self):
        reply, state = self.p.stdout.readline(), self.p.stdout.readline()
        if not reply or not state:
            raise RuntimeError('lsdrive stopped (status %s)' % self.p.poll())
        word, _, rest = reply.rstrip('\n').partition(' ')
        if word == 'ok':
            reply = ('ok', [int(x) for x in rest.split()])
        else:
            reply = ('err', error_text(rest))
        words = state.split()
        self.state = (clock_us(int(words[0])),
                      [(score_text(words[i]), words[i + 1]) for i in range(1, len(words), 2)])
        return reply

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Place:
    def __init__(self, rnd, hosts, whos):
        self.id = hexid(rnd, rnd.choice([1, 4, 16]))
        self.who = rnd.choice(whos)
        self.host = rnd.choice(hosts)
        self.live = False  # reserved and still renewing


class Sequence:
    """One schedule's random calls, the same through both sides, checked after each. Plain: a
    few places, any settings, the clock stepping either way. Crowded: many places of one HOST
    coming and going fast, to fill its ghosts' cap (16). Big: 1,100 places given up within a
    minute, past the schedule's cap of 1,024 ghosts, then plain calls."""

    def __init__(self, rnd, n, steps, big):
        self.rnd, self.n = rnd, n
        self.now = 1_700_000_000 * S + rnd.randrange(10 ** 12)
        self.kind = 'big' if big else 'crowded' if rnd.random() < 0.05 else 'plain'
        # A crowded one takes about 60 calls to fill a HOST's ghosts: a run of them, or none.
        self.steps = 3 * steps if self.kind == 'crowded' else rnd.randrange(5, steps + 1)
        if self.kind == 'plain':
            hosts = [''] + [hexid(rnd, 16) for _ in range(rnd.choice([1, 2, 3]))]
            whos = [''] + [hexid(rnd, 16) for _ in range(rnd.choice([1, 3, 6]))]
            self.places = [Place(rnd, hosts, whos) for _ in range(rnd.choice([2, 3, 5, 8]))]
            self.settings = rnd.sample(SETTINGS, rnd.choice([1, 1, 2, 3]))
            self.max_waits, self.per_hosts = MAX_WAITS, [0, 0, 1, 2, 3]
        else:
            host = hexid(rnd, 16)
            self.places = [Place(rnd, [host] * 9 + [''], [hexid(rnd, 16)]) for _ in range(40)]
            self.settings = [(1 * S, 1), (100000, 3), (1 * S, 4)]
            self.max_waits, self.per_hosts = [3600 * S], [0, 0, 0, 17, 20]
        # Crowded ones are let in rarely, so that their places are held, and leave ghosts.
        windows = WINDOWS if self.kind == 'plain' else [0, -1]
        self.windows = rnd.sample(windows, rnd.choice([1, 2]))
        self.lease = rnd.choice([5 * S] * 6 + [300000, 60 * S])
        self.log = []
        self.bad = False  # the call has an argument that slot.lua must refuse

    def args(self, op, place):
        rnd = self.rnd
        interval, burst = rnd.choice(self.settings)
        if rnd.random() < 0.05:  # a place that calls with another's WHO or HOST
            place = Place(rnd, [place.host, ''], [place.who, ''])
            place.id = rnd.choice(self.places).id
        # The next slot heard of, and the place's age: what makes a lost schedule again; the
        # floor a fallback sends.
        args = [op, interval, burst, rnd.choice(self.max_waits), 0, place.id, place.who,
                place.host, rnd.choice(self.per_hosts), self.lease, rnd.choice(self.windows),
                rnd.choice(HEARD), rnd.choice(AGES), rnd.choice(FLOORS)]
        odd = rnd.random()
        if odd < 0.03:
            i, v = rnd.choice(BAD)
            args[i - 1] = v
            self.bad = True
        elif odd < 0.06:
            i, v = rnd.choice(ODD)
            args[i - 1] = v
        return [str(a) for a in args]

    def garbage(self):
        rnd = self.rnd
        p = rnd.choice(self.places)
        place = '%s:%s:%s' % (p.id, p.who or '-', p.host or '-')
        member = rnd.choice([
            'w:zz:-:-', 's:junk', 'l:ab:-:-', 'g:' + hexid(rnd, 8), 's:1:2', 's:-1:0:0:1:1:0',
            's:%d:%d:0:1000000:1:0' % (self.now + rnd.randrange(-10 * S, 10 * S), self.now),
            'w:' + place, 'w:' + place + ':t', 'l:' + place, 'h:%s:%s' % (p.host or '-', p.id),
            'g:%s:%d:%d:%s:0' % (p.who or '-', self.now - S, self.now, p.host or '-'),
            'j:%s:%d:%d:%s:0' % (p.who or '-', self.now - S, self.now, p.host or '-'),
            'i:%s:%s' % (p.host or '-', p.who or '-'), hexid(rnd, 3)])
        base = rnd.choice([0, 0, LEASE, GHOST, -(2 ** 49), self.now])
        x = rnd.choice([0, 1, -1, rnd.randrange(-10 ** 9, 10 ** 9), self.now - base,
                        self.now - base + rnd.randrange(-100 * S, 100 * S)])
        score = rnd.choice(['%d' % (base + x), '%d' % (base + x), '%.17g' % (base + x + 0.5),
                            '%.3e' % (base + x), '-0'])
        return ['zadd', self.now, score, member]

    def tick(self):
        rnd = self.rnd
        kind = rnd.random()
        if self.kind != 'plain':
            self.now += rnd.choice([0, 10, 1000, 100000, S])
        elif kind < 0.5:
            self.now += rnd.choice(STEPS)
        elif kind < 0.6:
            self.now += rnd.choice(LONG_STEPS)
        elif kind < 0.66:
            self.now += rnd.choice(BACK_STEPS)

    def choose(self):
        """The next call's op and place."""
        rnd = self.rnd
        live = [p for p in self.places if p.live]
        if live and rnd.random() < 0.05:  # a kill: it stops renewing, its lease will lapse
            rnd.choice(live).live = False
            live = [p for p in self.places if p.live]
        r = rnd.random()
        renew, leave = (0.4, 0.5) if self.kind == 'plain' else (0.1, 0.45)
        if live and r < renew:
            return 'renew', rnd.choice(live)
        if live and r < leave:
            return 'leave', rnd.choice(live)
        if r < 0.55:  # a crowded schedule is never reset: its ghosts would go
            ops = ['peek', 'peek', 'reset'] if self.kind == 'plain' else ['peek']
            return rnd.choice(ops), rnd.choice(self.places)
        if r < 0.58:
            return rnd.choice(['renew', 'leave']), rnd.choice(self.places)
        idle = [p for p in self.places if not p.live]
        return 'reserve', rnd.choice(idle if idle and rnd.random() < 0.8 else self.places)

    def step(self):
        self.bad = False
        self.tick()
        if self.rnd.random() < 0.05:
            return self.garbage()
        op, place = self.choose()
        args = self.args(op, place)
        if args[0] == 'reserve':
            place.live = True
        elif args[0] == 'leave':
            place.live = False
        return ['eval', self.now, 'KEY'] + args

    def fill(self):
        """A big sequence's first calls: 1,100 places of their own WHO and HOST, each held and
        given up, 10 us apart."""
        for j in range(1100):
            place = ['c%d' % j, '%016x' % j, '%016x' % (j + 1 << 32), '0', str(self.lease), '0',
                     '0', '0']
            for op in ('reserve', 'leave'):
                self.now += 10
                yield ['eval', self.now, 'KEY', op, str(3600 * S), '1', str(7200000 * S), '0'] + \
                    place

    def calls(self):
        if self.kind == 'big':
            yield from self.fill()
        for _ in range(self.steps):
            yield self.step()

    def run(self, r, sha, seen):
        """The first difference, or None; seen counts what the calls did."""
        key = 'diff:%d' % self.n
        ref, store = Reference(r, sha, key), Store()
        try:
            for call in self.calls():
                self.log.append(call)
                store.send(call)
                want, want_state = ref.call(call)
                got = store.receive()
                if got != want or store.state != want_state:
                    return self.report(want, want_state, got, store.state)
                if self.bad and want[0] != 'err':
                    return self.report(want, want_state, got, store.state,
                                       'a bad argument that Redis took')
                count(seen, call, want, want_state)
            return None
        except RuntimeError as e:  # the driver stopped: its stderr said why
            return '%s at sequence %d, call %d of:\n%s' % (e, self.n, len(self.log), '\n'.join(
                '  ' + '\t'.join(str(f) for f in call) for call in self.log))
        finally:
            store.close()
            ref.drop()

    def report(self, want, want_state, got, got_state, why='redis and the store differ'):
        lines = ['%s at sequence %d, call %d of:' % (why, self.n, len(self.log))]
        lines += ['  ' + '\t'.join(str(f) for f in call) for call in self.log]
        lines.append('  redis: %s' % (want,))
        lines.append('  store: %s' % (got,))
        lines.append('  redis set: expires %d %s' % (want_state[0], want_state[1]))
        lines.append('  store set: expires %d %s' % (got_state[0], got_state[1]))
        if want_state[1] != got_state[1]:
            a, b = set(want_state[1]), set(got_state[1])
            lines.append('  only in redis: %s' % sorted(a - b))
            lines.append('  only in store: %s' % sorted(b - a))
        return '\n'.join(lines)


def count(seen, call, reply, state):
    """What a call did, so that a run shows it reached what it means to test."""
    seen['calls'] += 1
    if call[0] == 'zadd':
        seen['garbage'] += 1
    elif reply[0] == 'err':
        seen['errors'] += 1
    else:
        seen['%s %d' % (call[3], reply[1][0])] += 1
    members = state[1]
    seen['most members'] = max(seen['most members'], len(members))
    if any(m.startswith('g:') for _, m in members):
        seen['with ghosts'] += 1
    by_host = collections.Counter(m.split(':')[1] for _, m in members if m.startswith('i:'))
    seen['most ghosts of a host'] = max([seen['most ghosts of a host']] + list(by_host.values()))
    if by_host and max(by_host.values()) >= 16:
        seen['at a host\'s cap'] += 1


def overdue(*_):
    raise RuntimeError('no answer within DIFF_TIMEOUT (%s s)' % SEQUENCE_TIMEOUT)


SEQUENCE_TIMEOUT = int(os.environ.get('DIFF_TIMEOUT', '120'))


def worker_start():
    """A worker dies of SIGTERM at once, as Pool.terminate expects: with main's handler (exit
    143, cleaning up), a worker waited at its exit for a queue that nobody read any longer,
    and the run, its work done, hung until CI's own limit stopped it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def worker(job):
    """Sequences first, first + jobs, ... on a connection of its own: how many passed, the first
    difference (which ends the worker's share) or None, and what the calls did. A sequence
    that takes longer than SEQUENCE_TIMEOUT (a driver or a server that no longer answers) is a
    difference: SIGALRM, in this test's own process, ends its wait."""
    sock, sha, seed, steps, big, numbers = job
    r = redis.Redis(unix_socket_path=sock, decode_responses=True, socket_timeout=30)
    passed, seen = 0, collections.Counter()
    signal.signal(signal.SIGALRM, overdue)
    for n in numbers:
        rnd = random.Random('%d:%d' % (seed, n))
        signal.alarm(SEQUENCE_TIMEOUT)
        try:
            diff = Sequence(rnd, n, steps, big > 0 and n % big == 0).run(r, sha, seen)
        finally:
            signal.alarm(0)
        if diff:
            return passed, 'seed %d: %s' % (seed, diff), seen
        passed += 1
    return passed, None, seen


def main():
    sequences = int(os.environ.get('DIFF_SEQUENCES', '2000'))
    steps = int(os.environ.get('DIFF_STEPS', '30'))
    big = int(os.environ.get('DIFF_BIG', '0'))
    seed = int(os.environ.get('DIFF_SEED', '1'))
    only = os.environ.get('DIFF_ONLY')
    jobs = 1 if only else int(os.environ.get('DIFF_JOBS', str(os.cpu_count() or 1)))
    with open(LUA) as f:
        lua = f.read()
    if not os.access(DRIVER, os.X_OK):
        print('diff: no %s (make build/model/lsdrive)' % DRIVER)
        return 1
    numbers = [int(only)] if only else list(range(sequences))
    # Stopped (make's SIGTERM, a timeout): the finally below still stops the server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = Server()
    start = time.monotonic()
    try:
        sha = server.r.script_load(lua)
        work = [(server.sock, sha, seed, steps, big, numbers[j::jobs]) for j in range(jobs)]
        if jobs == 1:
            results = [worker(work[0])]
        else:
            # A worker that died would leave map waiting for ever: the run has a limit too.
            limit = max(600, len(numbers) // 10, SEQUENCE_TIMEOUT * 2)
            with multiprocessing.Pool(jobs, initializer=worker_start) as pool:
                try:
                    results = pool.map_async(worker, work).get(limit)
                except multiprocessing.TimeoutError:
                    print('diff: the run took over %d s: a worker no longer answers' % limit)
                    print('diff: 0 passed, 1 failed')
                    return 1
    finally:
        server.stop()
    passed = sum(p for p, _, _ in results)
    failures = [d for _, d, _ in results if d]
    seen = collections.Counter()
    for _, _, c in results:
        for k, v in c.items():
            seen[k] = max(seen[k], v) if k.startswith('most') else seen[k] + v
    for d in failures:
        print('diff: ' + d)
    if seen:
        print('diff: ' + ', '.join('%s %d' % kv for kv in sorted(seen.items())))
    print('diff: seed %d, DIFF_STEPS %d, DIFF_BIG %d, %.1f s' % (
        seed, steps, big, time.monotonic() - start))
    print('diff: %d passed, %d failed' % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
