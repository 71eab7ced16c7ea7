package drivers_test

import (
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

// perResourceKeys declares a plain topic (an access naming one) beside the
// per-resource topic.<key> (an access naming several), as kadm does.
var perResourceKeys = []drivers.SecretKey{
	{Name: "bootstrap", Description: "b"},
	{Name: "topic", Description: "one", Optional: true},
	{Name: "topics", Description: "several", Optional: true},
	{Name: "topic", Description: "each of several", Optional: true, PerResource: true},
}

// TestPerResourceKeyBesidePlainKey: a plain key and a per-resource key of
// the same base name may both be declared.
func TestPerResourceKeyBesidePlainKey(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("want the registry to accept topic and topic.<key>, got %v", r)
		}
	}()
	drivers.NewRegistry(&drivertest.Driver{Named: "k", Keys: perResourceKeys})
}

func TestSecretKeyIsKey(t *testing.T) {
	plain, per := perResourceKeys[1], perResourceKeys[3]
	cases := []struct {
		name       string
		plain, per bool
	}{
		{name: "topic", plain: true},
		{name: "topic.orders", per: true},
		{name: "topic.payments_orders", per: true},
		{name: "topic.a.b", per: true},
		{name: "topic."},
		{name: "topics"},
		{name: "topic.a/b"},
		{name: "xtopic.orders"},
	}
	for _, c := range cases {
		if got := plain.IsKey(c.name); got != c.plain {
			t.Errorf("plain topic IsKey(%q): want %v, got %v", c.name, c.plain, got)
		}
		if got := per.IsKey(c.name); got != c.per {
			t.Errorf("per-resource topic IsKey(%q): want %v, got %v", c.name, c.per, got)
		}
	}
}

func TestCheckSecretDataPerResource(t *testing.T) {
	cases := []struct {
		name string
		data map[string]string
		err  string
	}{
		{name: "one", data: map[string]string{"bootstrap": "b", "topic": "t"}},
		{name: "several", data: map[string]string{"bootstrap": "b", "topics": "a,b", "topic.x": "a", "topic.ns_y": "b"}},
		{name: "missing required", data: map[string]string{"topics": "a", "topic.x": "a"}, err: `required key "bootstrap" missing or empty`},
		{name: "undeclared", data: map[string]string{"bootstrap": "b", "topic.": "a", "bucket.x": "a"},
			err: `key "bucket.x" is not declared; key "topic." is not declared`},
	}
	for _, c := range cases {
		data := map[string][]byte{}
		for k, v := range c.data {
			data[k] = []byte(v)
		}
		err := drivers.CheckSecretData(perResourceKeys, data)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: want no error, got %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: want an error containing %q, got %v", c.name, c.err, err)
		}
	}
}
