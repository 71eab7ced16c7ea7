#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
implicit_to_explicit orders-topic
