# SPDX-License-Identifier: BSD-3-Clause
"""Two versions of src/slot.lua, both on the test's clock (tests/model/clock.sed), given the same
random calls: every reply, every member and score of the key, and its expiry must be the same.
A third key takes each call from either version at random, as a schedule does while its hosts
are upgraded one by one, and must be the same too. For changes that must not change what the
script decides or writes (its cost, its layout in the code); make model-same REV=... runs it.

Environment: SAME_OLD, SAME_NEW (the two scripts), SAME_SEQUENCES (300), SAME_SEED (1).
Starts and stops its own redis-server."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import redis

S = 1_000_000
SETTINGS = [(1 * S, 1), (3 * S, 1), (1 * S, 4), (2 * S, 2), (1, 1)]
# Schedules stored as a string by an earlier version, garbage, and one past any horizon.
STRINGS = ['{tat} {at}', '{tat}', 'junk', '{far} {at}']


def state(r, key):
    kind = r.type(key)
    body = r.zrange(key, 0, -1, withscores=True) if kind == 'zset' else r.get(key)
    return kind, body, r.get(key + ':expires')


def call(r, script, key, args):
    expires = r.get(key + ':expires')
    if expires is not None and args[-1] >= int(expires):
        r.delete(key, key + ':expires')
    try:
        return script(keys=[key], args=args)
    except redis.ResponseError as e:
        return 'error: ' + str(e).split(' script:')[0]


def sequence(r, scripts, rnd, n):
    """One schedule's random calls on three keys (old, new, either); the first call that
    differs, or None."""
    keys = ['same:%d:%s' % (n, k) for k in ('old', 'new', 'mixed')]
    now = 1_700_000_000 * S + rnd.randrange(10 ** 12)
    # Crowded: many logins from few hosts, close together, to reach the ghosts' caps.
    crowded = rnd.random() < 0.3
    ids = ['i%d' % j for j in range(rnd.choice([40, 60]) if crowded else rnd.choice([2, 4, 8]))]
    whos = [''] + ['w%d' % j for j in range(40 if crowded else 3)]
    hosts = ['h1', 'h1', 'h1', 'h2', ''] if crowded else ['', 'h1', 'h2']
    if rnd.random() < 0.1:
        value = rnd.choice(STRINGS).format(tat=now + 5 * S, at=now - S, far=now + 10 ** 13)
        for key in keys:
            r.set(key, value)
    if rnd.random() < 0.03:  # past the cap of 1024 ghosts
        for j in range(1100):
            for op in ('reserve', 'leave'):
                args = [op, 3600 * S, 1, 3600 * S * 2000, 0, 'c%d' % j, 'cw%d' % j, 'ch%d' % j, 0,
                        3600 * S, 0, 0, 0, now]
                for key, script in zip(keys, scripts + [rnd.choice(scripts)]):
                    call(r, script, key, args)
            now += 10
    for step in range(rnd.randrange(5, 200 if crowded else 60)):
        steps = [0, 1, 10, 1000, 100000, S] + ([] if crowded else
                                               [2 * S, 5 * S, 30 * S, 70 * S, -5 * S, -40 * S])
        now += rnd.choice(steps)
        op = rnd.choice(['reserve'] * 4 + ['renew'] * 4 + ['leave'] * 2 + ['peek', 'reset'])
        interval, burst = rnd.choice(SETTINGS)
        args = [op, interval, burst, rnd.choice([0, 5 * S, 12 * S, 60 * S, 3600 * S]), 0,
                rnd.choice(ids), rnd.choice(whos), rnd.choice(hosts), rnd.choice([0, 0, 1, 2]),
                rnd.choice([300000, 5 * S, 5 * S, 60 * S]), rnd.choice([0, 2 * S]),
                rnd.choice([0, 0, 0, 3 * S]), rnd.choice([0, 0, 0, 10 * S]), now]
        replies = [call(r, script, key, args)
                   for key, script in zip(keys, scripts + [rnd.choice(scripts)])]
        states = [state(r, key) for key in keys]
        if replies[1:] != replies[:1] * 2 or states[1:] != states[:1] * 2:
            return 'sequence %d, step %d: %s\n  old:   %s %s\n  new:   %s %s\n  mixed: %s %s' % (
                n, step, args, replies[0], states[0], replies[1], states[1], replies[2], states[2])
    for key in keys:
        r.delete(key, key + ':expires')
    return None


def main():
    sequences = int(os.environ.get('SAME_SEQUENCES', '300'))
    rnd = random.Random(int(os.environ.get('SAME_SEED', '1')))
    tmp = tempfile.mkdtemp(prefix='flowslot-same.')
    sock = os.path.join(tmp, 'redis.sock')
    server = subprocess.Popen(['redis-server', '--port', '0', '--unixsocket', sock, '--save', '',
                               '--appendonly', 'no', '--dir', tmp], stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(unix_socket_path=sock, decode_responses=True, socket_timeout=10)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        scripts = []
        for name in ('SAME_OLD', 'SAME_NEW'):
            with open(os.environ[name]) as f:
                scripts.append(r.register_script(f.read()))
        for n in range(sequences):
            diff = sequence(r, scripts, rnd, n)
            if diff:
                print('not ok - the two scripts differ at ' + diff)
                return 1
        print('ok - %d sequences of random calls: the same replies, members, scores and expiry'
              % sequences)
        return 0
    finally:
        server.terminate()  # by pid: Popen knows it
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
