package s3

import (
	"context"
	"fmt"

	"github.com/Yolean/buckety-controller/drivers"
)

// Access Secrets. In v1alpha1 every access gets the backend's own keys;
// there are no per-access keys yet, so Revoke has nothing to remove.

// Grant implements drivers.Backend: the backend's own keys in v1alpha1.
func (b *Backend) Grant(_ context.Context, a drivers.Access) (drivers.Grant, error) {
	p := parseParams(a.ResourceParameters)
	endpoint := b.cfg.consumerEndpoint()
	if p.jurisdiction != "" {
		ep, err := b.cfg.consumerJurisdictionEndpoint(p.jurisdiction)
		if err != nil {
			return drivers.Grant{}, err
		}
		endpoint = ep
	}
	data := map[string][]byte{
		SecretEndpoint:        []byte(endpoint),
		SecretBucket:          []byte(a.Resource),
		SecretAccessKeyID:     []byte(b.cfg.AccessKeyID),
		SecretSecretAccessKey: []byte(b.cfg.SecretAccessKey),
	}
	switch {
	case p.region != "":
		data[SecretRegion] = []byte(p.region)
	case b.cfg.Region != "":
		data[SecretRegion] = []byte(b.cfg.Region)
	}
	return drivers.Grant{Data: data, Reason: fmt.Sprintf("backend %s hands every access its own keys: the s3 driver does not mint keys per access", b.name)}, nil
}

// Revoke implements drivers.Backend; no per-access keys exist in v1alpha1.
func (b *Backend) Revoke(context.Context, drivers.Access) error { return nil }
