#!/bin/bash
# sonde's test runner: integration tests (and the unit tests given with --unit); see run.py.
exec python3 "$(dirname "$0")/run.py" "$@"
