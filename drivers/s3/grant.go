package s3

import (
	"context"
	"fmt"

	"github.com/Yolean/buckety-controller/drivers"
)

// Access Secrets: a key of the access's own where the backend issues them
// (credentials.go: credentials set, on minio, versitygw, aws or seaweedfs; the controller then
// names the principal in Access.Principal), and otherwise the backend's
// own keys.

// Grant implements drivers.Backend.
func (b *Backend) Grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	g, err := b.grant(ctx, a)
	if err != nil || len(a.SecretFormats) == 0 {
		return g, err
	}
	if err := b.cfg.renderFormats(a.SecretFormats, g.Data); err != nil {
		return drivers.Grant{}, fmt.Errorf("s3: backend %s: grant for %s/%s: %w", b.name, a.Namespace, a.Name, err)
	}
	return g, nil
}

// grant is Grant before the secret formats are added.
func (b *Backend) grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	if a.Resource == "" {
		// The controller grants only on a resolved name; a Secret
		// without its bucket would be worse than none.
		return drivers.Grant{}, fmt.Errorf("s3: backend %s: grant for %s/%s: no bucket", b.name, a.Namespace, a.Name)
	}
	if err := b.sameJurisdiction(a); err != nil {
		return drivers.Grant{}, err
	}
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
		SecretAccessKeyID:     []byte(b.cfg.AccessKeyID),
		SecretSecretAccessKey: []byte(b.cfg.SecretAccessKey),
	}
	if a.Principal != "" {
		// a key of its own: the backend's never reaches its Secret
		delete(data, SecretAccessKeyID)
		delete(data, SecretSecretAccessKey)
	}
	if r := b.regionOf(a.ResourceParameters); r != "" {
		data[SecretRegion] = []byte(r)
	}
	severalData(a, data, b.regionOf)
	if a.Principal != "" {
		return b.grantCredential(ctx, a, data)
	}
	if b.cfg.perAccess() {
		// The maintainer asked for a key per access: the backend's own
		// keys never reach a tenant's Secret instead.
		return drivers.Grant{}, fmt.Errorf("s3: backend %s: grant for %s/%s without a key of its own: credentials.mode is PerAccess, so the backend's own keys are never handed out", b.name, a.Namespace, a.Name)
	}
	reason := b.cfg.sharedReason(b.name)
	if reason == "" {
		reason = fmt.Sprintf("backend %s handed this access its own keys", b.name)
	}
	return drivers.Grant{Data: data, Reason: reason}, nil
}

// regionOf is a bucket's region as its Secret says it: its region
// parameter, or the backend's region; "" when neither is set.
func (b *Backend) regionOf(params map[string]string) string {
	if r := parseParams(params).region; r != "" {
		return r
	}
	return b.cfg.Region
}

// Revoke implements drivers.Backend: an access's own key is removed; the
// backend's own keys, which shared accesses hold, never are.
func (b *Backend) Revoke(ctx context.Context, a drivers.Access) error {
	if a.Principal == "" {
		return nil
	}
	return b.revokeCredential(ctx, a)
}
