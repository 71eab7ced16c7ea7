#!/usr/bin/env bash
# e2e: exclusive (scales the controller to zero)
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
webhook_controller_down '"kafka"' kafak '{backend: kafka, parameters: {partitions: "zero"}}' 'spec.parameters[partitions]' '{"replicationFactor":"2"}'
