package drivers_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

// formatted is a test driver that offers secret formats.
type formatted struct {
	*drivertest.Driver
	formats []drivers.SecretFormat
}

func (f formatted) SecretFormats() []drivers.SecretFormat { return f.formats }

func TestSecretFormatsRegistry(t *testing.T) {
	base := func() *drivertest.Driver {
		return &drivertest.Driver{Named: "k", Keys: []drivers.SecretKey{{Name: "token", Description: "x"}}}
	}
	key := func(n string) drivers.SecretKey { return drivers.SecretKey{Name: n, Description: "d"} }
	for want, fs := range map[string][]drivers.SecretFormat{
		`secret format "Env" must be lowercase`:           {{Name: "Env", Description: "d", Keys: []drivers.SecretKey{key("A")}}},
		`secret format "env" declared twice`:              {{Name: "env", Description: "d", Keys: []drivers.SecretKey{key("A")}}, {Name: "env", Description: "d", Keys: []drivers.SecretKey{key("B")}}},
		`secret format "env" has no description`:          {{Name: "env", Keys: []drivers.SecretKey{key("A")}}},
		`secret format "env" adds no key`:                 {{Name: "env", Description: "d"}},
		`key "token" is a default key`:                    {{Name: "env", Description: "d", Keys: []drivers.SecretKey{key("token")}}},
		`key "a b" must be a Secret data key`:             {{Name: "env", Description: "d", Keys: []drivers.SecretKey{key("a b")}}},
		`secret format "env": key "A" has no description`: {{Name: "env", Description: "d", Keys: []drivers.SecretKey{{Name: "A"}}}},
		`secret format "env": key "A" declared twice`:     {{Name: "env", Description: "d", Keys: []drivers.SecretKey{key("A"), key("A")}}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), want) {
					t.Errorf("want a panic with %q, got %v", want, r)
				}
			}()
			drivers.NewRegistry(formatted{base(), fs})
		}()
	}
	// Two formats may add the same key: it is declared once, naming both.
	d := formatted{base(), []drivers.SecretFormat{
		{Name: "env", Description: "d", Keys: []drivers.SecretKey{key("ID"), key("URL")}},
		{Name: "obc", Description: "d", Keys: []drivers.SecretKey{key("ID"), key("HOST")}},
	}}
	drivers.NewRegistry(d)
	var got []string
	for _, k := range drivers.AllSecretKeys(d) {
		got = append(got, k.Name+":"+strings.Join(k.Formats, "+"))
		if k.Name != "token" && !k.Optional {
			t.Errorf("format key %s is not optional", k.Name)
		}
	}
	if s := strings.Join(got, ","); s != "token:,ID:env+obc,URL:env,HOST:obc" {
		t.Errorf("AllSecretKeys = %s", s)
	}

	p := field.NewPath("spec", "secretFormats")
	errs := drivers.ValidateSecretFormats(p, d, []string{"obc", "yaml", "obc"})
	if s := errs.ToAggregate().Error(); len(errs) != 2 || !strings.Contains(s, `spec.secretFormats[1]: Unsupported value: "yaml": supported values: "env", "obc"`) || !strings.Contains(s, `spec.secretFormats[2]: Duplicate value: "obc"`) {
		t.Errorf("ValidateSecretFormats = %v", errs)
	}
	if errs := drivers.ValidateSecretFormats(p, base(), []string{"env"}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "driver k offers no secret formats") {
		t.Errorf("a driver without formats: %v", errs)
	}
}
