# drivers/s3.sh: what the shared scenarios (test/e2e/scenarios) take from
# driver s3, loaded by an assert.sh with `. lib.sh s3`. Every driver's file
# defines the same names (drivers/kadm.sh documents them); a scenario's own
# differences are the arguments and hooks its assert.sh gives.
DRIVER=s3
BACKEND=s3
RESOURCE=bucket
CONTENT=objects
SERVER="S3 server"
CREDENTIAL=key

# admin SECRET ARGS...: out-of-band operations, as the server's operator.
admin() { s3_admin "$@"; }

# scoped: every access gets a key of its own.
scoped() { scoped_s3; }

# expect_keys SECRET [OPTIONAL-KEY...]: the Secret has the driver's keys,
# bucket (an access naming one Buckety) and region among them: the e2e
# backends have a region.
expect_keys() { expect_secret_keys "$1" "$DRIVER" bucket region "${@:2}"; }

# create_full SECRET NAME: creates bucket NAME out of band holding three
# objects.
create_full() { s3_admin "$1" create "$2" 3; }

# fill_with SECRET NAME N: puts N objects into bucket NAME.
fill_with() { s3_admin "$1" put-many "$2" "$3"; }

# content_count SECRET NAME: the objects bucket NAME holds, every version.
content_count() { s3_admin "$1" count-all "$2" | tail -1; }

# operator_secret FROM COPY: a Secret COPY that outlives FROM, with what
# admin needs of it (the endpoint, region and keys).
operator_secret() {
  k create secret generic "$2" --from-literal=endpoint="$(secret_value "$1" endpoint)" --from-literal=region="$(secret_value "$1" region)" \
    --from-literal=accessKeyID="$(secret_value "$1" accessKeyID)" --from-literal=secretAccessKey="$(secret_value "$1" secretAccessKey)" >/dev/null
}
