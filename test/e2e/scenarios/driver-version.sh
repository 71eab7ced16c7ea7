# driver_version DRIVER PARAMS UNCHANGED: the driver-version scenario of
# every driver, on buckety/versioned. The Buckety is stamped with DRIVER's
# registered version (buckety-release drivers); the controller then runs
# from an image with the next patch of every driver (status.driverBuildVersion
# follows, automatically) and then the next major (DriverVersionIncompatible,
# nothing written). The environment builds the two images with
# `buckety-release drivers --ldflags next-patch|next-major`. PARAMS is a
# spec.parameters patch (JSON) made while paused; UNCHANGED is a command
# that fails unless the backend resource still has the old value.
driver_version() {
  local driver=$1 params=$2 unchanged=$3 original build major next
  E2E_IMAGE_NEXT_PATCH=$(next_image E2E_IMAGE_NEXT_PATCH) || exit 1
  E2E_IMAGE_NEXT_MAJOR=$(next_image E2E_IMAGE_NEXT_MAJOR) || exit 1
  build=$(release_tool drivers | awk -v d="$driver" '$1 == d {print $2}')
  [ -n "$build" ] || fail "driver $driver is not registered: $(release_tool drivers)"
  major=${build%%.*}
  next="${build%.*}.$((${build##*.} + 1))"
  original=$(sys get deploy buckety-controller -o jsonpath='{.spec.template.spec.containers[0].image}')
  # shellcheck disable=SC2064 # the image is fixed now
  trap "set_controller_image '$original'" EXIT
  wait_cond buckety/versioned Ready True
  expect_eq "stamped major" "$major" "$(jp buckety/versioned '{.status.driverMajor}')"
  expect_eq "driverBuildVersion" "$build" "$(jp buckety/versioned '{.status.driverBuildVersion}')"
  step "next patch ($next): auto-applied"
  set_controller_image "$E2E_IMAGE_NEXT_PATCH"
  local deadline=$((SECONDS + E2E_TIMEOUT))
  until [ "$(jp buckety/versioned '{.status.driverBuildVersion}')" = "$next" ]; do
    [ $SECONDS -lt $deadline ] || fail "driverBuildVersion: expected $next, seen $(jp buckety/versioned '{.status.driverBuildVersion}')"
    sleep 1
  done
  wait_cond buckety/versioned Ready True
  step "next major: paused, nothing written"
  set_controller_image "$E2E_IMAGE_NEXT_MAJOR"
  k patch buckety versioned --type=merge -p "{\"spec\":{\"parameters\":$params}}" >/dev/null
  wait_cond buckety/versioned DriverVersionIncompatible True DriverMajorMismatch
  expect_contains "incompatibility message" "provisioned with major $major" "$(cond buckety/versioned DriverVersionIncompatible message)"
  sleep 12 # more than one re-check period
  $unchanged
  expect_eq "major stays" "$major" "$(jp buckety/versioned '{.status.driverMajor}')"
}

# next_image VAR: the image the environment built for VAR
# (E2E_IMAGE_NEXT_PATCH or E2E_IMAGE_NEXT_MAJOR): the variable itself, or
# the file VAR_FILE names once the build that local.sh runs in the
# background writes it.
next_image() {
  local var=$1 file_var=${1}_FILE deadline=$((SECONDS + 600))
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  local file=${!file_var:-}
  [ -n "$file" ] || fail "the environment must build the controller with the next driver patch and major: set $var or $file_var (see README)"
  until [ -s "$file" ]; do
    [ ! -e "$file.failed" ] || fail "$var: the environment's build of it failed"
    [ $SECONDS -lt $deadline ] || fail "$var: $file not written within 600s"
    sleep 2
  done
  cat "$file"
}
