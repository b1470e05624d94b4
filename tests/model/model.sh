#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The schedule against its model (docs/MODEL.md): tests/model/test_model.py, with Debian's
# python3 (python3-hypothesis, python3-redis), which starts and stops its own redis-server.
set -u
TREE=$(cd "$(dirname "$0")/../.." && pwd)
export MODEL_LUA=${MODEL_LUA:-$TREE/build/model/slot_clock.lua}
export MODEL_DRIVER=${MODEL_DRIVER:-$TREE/build/model/lsdrive}
case $MODEL_LUA in /*) ;; *) MODEL_LUA=$PWD/$MODEL_LUA ;; esac
case $MODEL_DRIVER in /*) ;; *) MODEL_DRIVER=$PWD/$MODEL_DRIVER ;; esac
cd "$TREE/tests/model" || exit 1
PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 test_model.py "$@"
