#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
lifecycle_refused
