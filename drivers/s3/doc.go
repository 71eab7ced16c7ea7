// Package s3 is the s3 driver: buckets on any S3-compatible store (AWS S3,
// Cloudflare R2, MinIO, VersityGW, Hetzner, GCS interop) through
// aws-sdk-go-v2. One driver covers them all; the bet is that the client
// library is the right abstraction layer.
//
// A Buckety is one bucket. Parameters are the bucket's region (immutable),
// versioning and a portable lifecycle subset (both reconciled on every
// pass), and the capability-gated R2 jurisdiction. A backend that answers
// NotImplemented for a feature fails safe: the bucket is provisioned, and the
// missing feature is reported as a shortfall instead of blocking readiness.
//
// Deletion (retentionPolicy Delete) follows PersistentVolume Delete
// semantics: the bucket is emptied in bounded slices (every object version,
// every delete marker, every incomplete multipart upload), each call
// reporting progress, so a bucket with millions of objects is deleted across
// many reconciles and resumes after a restart.
//
// v1alpha1 mints no per-consumer credentials: every access receives the
// backend's configured keys, reported as not scoped.
package s3
