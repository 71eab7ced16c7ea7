package main

import (
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/all"
)

// TestEveryDriverHasARoundTrip: a driver registered in drivers/all is one
// the probe can be handed a Secret of.
func TestEveryDriverHasARoundTrip(t *testing.T) {
	for _, name := range all.Registry().Names() {
		if roundTrips[name] == nil {
			t.Errorf("driver %s: want a round trip in roundTrips", name)
		}
	}
	for name := range roundTrips {
		if _, ok := all.Registry().Get(name); !ok {
			t.Errorf("roundTrips has %s, which is not a registered driver", name)
		}
	}
}

func TestChooseDriver(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
		err  string
	}{
		{name: "kadm", env: map[string]string{"bootstrap": "k:9092", "topic": "t"}, want: "kadm"},
		{name: "s3 without region", env: map[string]string{"endpoint": "http://s", "bucket": "b", "accessKeyID": "a", "secretAccessKey": "s"}, want: "s3"},
		{name: "s3 with region", env: map[string]string{"endpoint": "http://s", "bucket": "b", "region": "r", "accessKeyID": "a", "secretAccessKey": "s"}, want: "s3"},
		{name: "s3 missing a key", env: map[string]string{"endpoint": "http://s", "bucket": "b", "accessKeyID": "a"}, err: "no Secret in the environment: want keys bootstrap (kadm) or endpoint+accessKeyID+secretAccessKey (s3)"},
		{name: "empty", env: map[string]string{}, err: "no Secret in the environment"},
		{name: "both", env: map[string]string{"bootstrap": "k:9092", "topic": "t", "endpoint": "http://s", "bucket": "b", "accessKeyID": "a", "secretAccessKey": "s"}, err: "the Secret keys of several drivers: kadm, s3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := chooseDriver(all.Registry(), func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want an error containing %q, got %q %v", c.err, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("want %s, got %q %v", c.want, got, err)
			}
		})
	}
}
