# parameter_mutation BUCKETY [WHAT PARAMS WANT]...: the parameter-mutation
# scenario of every driver. Once buckety/BUCKETY is Ready, the assert.sh's
# hook mutation_initial checks its resource on the server, and
# mutation_change changes spec.parameters and waits until the server has
# the change. Then each change WHAT of spec.parameters to PARAMS (JSON) is
# rejected at admission with WANT.
parameter_mutation() {
  local buckety=$1; shift
  wait_cond "buckety/$buckety" Ready True
  mutation_initial
  step "change the parameters"
  mutation_change
  step "immutable changes are rejected at admission"
  while [ $# -ge 3 ]; do
    refused_patch "$buckety" "$1" "$2" "$3"
    shift 3
  done
}
