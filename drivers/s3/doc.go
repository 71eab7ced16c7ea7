// Package s3 is the s3 driver: buckets on any S3-compatible store (AWS S3,
// Cloudflare R2, MinIO, VersityGW, Hetzner, GCS interop) through
// aws-sdk-go-v2. One driver covers them all; the bet is that the client
// library is the right abstraction layer.
//
// A Buckety is one bucket. Parameters are the bucket's region (immutable,
// common to every service), versioning and a portable lifecycle subset
// (both reconciled on every pass), and R2's jurisdiction (immutable).
//
// What not every service implements is capability-gated by the backend's
// implementation: refused at admission, with a message naming the
// implementation, where the service would answer NotImplemented (lifecycle
// on VersityGW, versioning on R2, R2's jurisdiction everywhere else). A
// Buckety whose kubectl wait --for=condition=Ready passes while what it
// asked for never happens is worse than a refusal. What gating cannot see
// (VersityGW started without --versioning-dir) still fails safe at run
// time: the bucket is provisioned and the missing feature is reported as a
// shortfall.
//
// Every call on a bucket goes to the endpoint it lives on: an R2
// jurisdiction has its own (derived from the account endpoint, or set in
// jurisdictionEndpoints), and Inspect and Delete take the Buckety's
// parameters for that reason, so the adoption check and deletion look
// where Ensure created.
//
// Adoption safety counts everything deletion would destroy as content:
// current objects, noncurrent versions, delete markers and in-progress
// multipart uploads.
//
// Deletion (retentionPolicy Delete) follows PersistentVolume Delete
// semantics: the bucket is emptied in bounded slices (every object version,
// every delete marker, every incomplete multipart upload), each call
// reporting progress, so a bucket with millions of objects is deleted across
// many reconciles and resumes after a restart.
//
// A backend without credentials in its config hands every access its own
// configured keys, reported as shared (ScopingNotImplemented); with them,
// each access gets a per-access credential (credentials.go).
package s3
