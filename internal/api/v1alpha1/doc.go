// Package v1alpha1 is the buckety.yolean.se/v1alpha1 API: Buckety, a named
// and individually configurable backend resource (a Kafka topic, an S3
// bucket), and BucketyAccess, one consumer's credentials for it as a flat-key
// Secret.
//
// The split follows COSI's compartment/credential-binding model, with the
// four COSI properties that disqualified it fixed: the backend name is
// chosen by the tenant (spec.name, a template), parameters live on each
// resource rather than on a shared class, those parameters are mutable and
// reconciled, and Secrets carry flat keys a workload reads with
// secretKeyRef.
//
// The CRDs under deploy/ are generated from these types by controller-gen;
// edit the markers here, then run make generate.
//
// +kubebuilder:object:generate=true
// +groupName=buckety.yolean.se
package v1alpha1
