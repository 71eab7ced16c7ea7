package buckety

import (
	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
)

// backendResource is the resource every driver call of this controller
// addresses: name on e, with params. Given the claim cl on it, the
// location parameters are those cl recorded, not params' own
// (claims.Effective): where a resource lives is what its claim recorded,
// whatever the spec says now. Callers set the options of one call
// (DryRun, CreateOnly, MaxAge, BeforeWrite) on the result.
func backendResource(e *backends.Entry, name string, params map[string]string, cl *v1.BucketyClaim) drivers.Resource {
	if cl != nil {
		params = claims.Effective(drivers.LocationParameters(e.Driver), cl, params)
	}
	return drivers.Resource{Name: name, Parameters: params}
}
