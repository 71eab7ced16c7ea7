package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of buckety's kinds.
	GroupVersion = schema.GroupVersion{Group: "buckety.yolean.se", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Finalizer blocks deletion of both kinds until the controller has cleaned
// up: revoked an access and deleted its Secret, or released (and with
// retentionPolicy Delete, deleted) a Buckety's backend resource.
const Finalizer = "buckety.yolean.se/cleanup"

// ImplicitLabel marks the BucketyAccess the controller materialises from
// Buckety.spec.defaultAccess. Together with the owner reference it tells the
// controller which accesses it may delete on its own.
const ImplicitLabel = "buckety.yolean.se/implicit"

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Buckety{}, &BucketyList{}, &BucketyAccess{}, &BucketyAccessList{}, &BucketyClaim{}, &BucketyClaimList{}, &BucketyCredential{}, &BucketyCredentialList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
