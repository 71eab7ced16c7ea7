# multiple_consumers BUCKETY SAME ACCESS:ROLE...: the multiple-consumers
# scenario of every driver, on buckety/BUCKETY (no defaultAccess) and its
# accesses ACCESS (each writing a Secret of its name, BUCKETY-<probe name>)
# with ROLE. Every Secret has the driver's keys; the first two agree on the
# keys SAME (space-separated). Where every access has a credential of its
# own, ScopingNotImplemented is False (then the assert.sh's hook
# multiple_consumers_scoped ACCESS...), elsewhere it is reported (then the
# optional hook multiple_consumers_unscoped ACCESS...). No implicit access
# exists; every Secret works for its role (then the optional hook
# multiple_consumers_probed).
multiple_consumers() {
  local buckety=$1 same=$2 e a key; shift 2
  local accesses=() keys=()
  for e in "$@"; do accesses+=("${e%%:*}"); done
  read -ra keys <<<"$same"
  wait_cond "buckety/$buckety" Ready True
  for a in "${accesses[@]}"; do
    wait_cond "bucketyaccess/$a" Ready True
    expect_keys "$a"
  done
  for key in "${keys[@]}"; do
    expect_eq "identical $key" "$(secret_value "${accesses[0]}" "$key")" "$(secret_value "${accesses[1]}" "$key")"
  done
  if scoped; then
    step "every access has a $CREDENTIAL of its own, with its role's rights"
    for a in "${accesses[@]}"; do
      wait_cond "bucketyaccess/$a" ScopingNotImplemented False AsExpected
      expect_eq "kubectl get bucketyaccess $a -o wide, NOT-SCOPED" False "$(wide_column bucketyaccess "$a" NOT-SCOPED)"
    done
    wait_cond "buckety/$buckety" ScopingNotImplemented False
    multiple_consumers_scoped "${accesses[@]}"
  else
    step "identical credentials: scoping is reported, not pretended"
    for a in "${accesses[@]}"; do
      wait_cond "bucketyaccess/$a" ScopingNotImplemented True CredentialsNotScoped
      expect_eq "kubectl get bucketyaccess $a -o wide, NOT-SCOPED" True "$(wide_column bucketyaccess "$a" NOT-SCOPED)"
    done
    wait_cond "buckety/$buckety" ScopingNotImplemented True CredentialsNotScoped
    hook multiple_consumers_unscoped "${accesses[@]}"
  fi
  step "no implicit access without defaultAccess"
  if k get bucketyaccess "$buckety" >/dev/null 2>&1; then fail "an implicit access exists without defaultAccess"; fi
  step "every Secret works for its role (and, scoped, for nothing more)"
  for e in "$@"; do
    a=${e%%:*}
    probe "$a" "${a#"$buckety"-}" "${e#*:}"
  done
  hook multiple_consumers_probed
}
