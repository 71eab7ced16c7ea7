# client_matrix SECRET KEY ACCESS...: the client-matrix scenario of every
# driver: real clients (no one here wrote them) use the Secrets' shapes.
# Once the accesses ACCESS... are Ready, the assert.sh's hooks check the
# Secrets' keys (client_matrix_keys) and run the clients
# (client_matrix_clients). Where every access has a credential of its own,
# access app is rotated: its Secret SECRET names another credential in KEY,
# and client_matrix_rotated NEW checks every shape uses it.
client_matrix() {
  local secret=$1 key=$2 a old new; shift 2
  step "the Secrets hold the default keys and the shapes they asked for"
  for a in "$@"; do wait_cond "bucketyaccess/$a" Ready True; done
  client_matrix_keys
  client_matrix_clients
  scoped || return 0
  step "rotation rewrites every shape at once: the clients use the new $CREDENTIAL"
  old=$(secret_value "$secret" "$key")
  rotate app r1
  new=$(secret_value "$secret" "$key")
  [ "$old" != "$new" ] || fail "rotation: the Secret still names $old"
  client_matrix_rotated "$new"
}
