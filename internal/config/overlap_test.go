package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/config"
)

// TestNamePolicyOverlapOnOneService: two backends of one service (one
// claim space) whose name policies give one name to two namespaces are
// refused at load, naming both prefixes, an example and the fix; policies
// that keep every name to one namespace, and overlapping policies on two
// services, load.
func TestNamePolicyOverlapOnOneService(t *testing.T) {
	cases := []struct {
		name, a, b string
		// service of backend b; empty: the same as backend a's.
		service string
		want    []string // empty: accepted
	}{
		{"the same prefix", "$${namespace}.", "$${namespace}.", "", nil},
		{"the same text before the namespace, other separators", "$${namespace}.", "$${namespace}_", "", nil},
		{"the same text before the namespace, more after it", "$${namespace}.", "$${namespace}.eu.", "", nil},
		{"texts that differ", "a.$${namespace}.", "b.$${namespace}.", "", nil},
		{"texts that differ, one longer", "a.$${namespace}.", "bb-$${namespace}.", "", nil},
		{"a zone and the same zone", "$${backend.zone}-$${namespace}.", "eu-$${namespace}.", "", nil},
		{"a zone and another text", "$${backend.zone}-$${namespace}.", "us-$${namespace}.", "", nil},
		{"a namespace name then a byte the shorter policy does not follow it with", "$${namespace}.", "eu_$${namespace}.", "", nil},
		{"a text no namespace name can start", "$${namespace}.", "-x.$${namespace}.", "", nil},
		{"a text that is not a namespace then the namespace", "$${namespace}.", "_$${namespace}.", "", nil},
		{"dash text, other separator after the longer namespace", "$${namespace}_", "eu-$${namespace}.", "", nil},
		{"the shorter policy's namespace would have to be the longer's", "x.$${namespace}.", "$${namespace}.$${namespace}.", "", nil},
		{"second namespace meeting other text", "$${namespace}.$${namespace}.", "eu-$${namespace}.zz-", "", nil},
		{"overlap, on two services", "$${namespace}.", "eu-$${namespace}.", "other", nil},

		{"a dash text before the namespace", "$${namespace}.", "eu-$${namespace}.", "", []string{
			`backends[1].namePolicy.prefix: Invalid value: "eu-${namespace}.": overlaps backends[0].namePolicy.prefix ("${namespace}.") on service kafka`,
			`namespace eu-x may claim "eu-x.orders" through backend a, and namespace x through backend b`,
			`write the same text before $${namespace} in both`, `"a.$${namespace}." and "b.$${namespace}."`,
		}},
		{"a dash text from a default", "$${backend.zone}-$${namespace}.", "$${namespace}.", "", []string{
			`backends[1].namePolicy.prefix: Invalid value: "${namespace}.": overlaps backends[0].namePolicy.prefix ("${backend.zone}-${namespace}.", here "eu-${namespace}.")`,
			`namespace x may claim "eu-x.orders" through backend a, and namespace eu-x through backend b`,
		}},
		{"a namespace name and a dot before the namespace", "$${namespace}.", "eu.$${namespace}.", "", []string{
			`backends[1].namePolicy.prefix: Invalid value: "eu.${namespace}.": overlaps backends[0].namePolicy.prefix ("${namespace}.")`,
			`namespace eu may claim "eu.x.orders" through backend a, and namespace x through backend b`,
		}},
		{"a namespace name and the shorter policy's separator", "$${namespace}_", "team_x.$${namespace}.", "", []string{
			`namespace team may claim "team_x.x.orders" through backend a, and namespace x through backend b`,
		}},
		{"the longer text ends inside the shorter's namespace", "p.$${namespace}.", "p.eu$${namespace}.", "", []string{
			`namespace eux may claim "p.eux.orders" through backend a, and namespace x through backend b`,
		}},
		{"the shorter policy goes on into the longer's namespace", "x.$${namespace}.", "$${namespace}.y.", "", []string{
			`namespace y may claim "x.y.orders" through backend a, and namespace x through backend b`,
		}},
		{"a second namespace meeting a text it can be", "$${namespace}.$${namespace}.", "eu-$${namespace}.eu-zz.", "", []string{
			`namespace eu-zz may claim "eu-zz.eu-zz.orders" through backend a, and namespace zz through backend b`,
		}},
		{"a second namespace the check does not follow: refused, though no name goes to two namespaces", "$${namespace}.$${namespace}.", "eu-$${namespace}.eu-$${namespace}-q.", "", []string{
			`backends[1].namePolicy.prefix: Invalid value: "eu-${namespace}.eu-${namespace}-q.": may overlap backends[0].namePolicy.prefix ("${namespace}.${namespace}.") on service kafka`,
			"the check cannot show that no name goes to two namespaces",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			service := c.service
			if service == "" {
				service = "kafka"
			}
			body := fmt.Sprintf(`backends:
- name: a
  driver: kadm
  service: kafka
  config: {seedBrokers: ['k:9092']}
  defaults: {zone: eu}
  namePolicy: {prefix: %q}
- name: b
  driver: kadm
  service: %s
  config: {seedBrokers: ['k%s:9092']}
  namePolicy: {prefix: %q}
`, c.a, service, service, c.b)
			for _, withoutEnv := range []bool{false, true} {
				_, err := config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), Lookup: lookup(nil), WithoutCredentials: withoutEnv})
				if len(c.want) == 0 {
					if err != nil {
						t.Errorf("webhook=%v: want accepted, got %v", withoutEnv, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("webhook=%v: want refused, got accepted", withoutEnv)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("webhook=%v: want the error to contain %q, got %v", withoutEnv, w, err)
					}
				}
			}
		})
	}
}

// TestNamePolicyOverlapLeftToController: a prefix the webhook cannot
// resolve is not compared there (the controller, which can, compares it),
// and a prefix checkPolicy refused is reported once, by checkPolicy.
func TestNamePolicyOverlapLeftToController(t *testing.T) {
	body := `backends:
- {name: a, driver: kadm, service: kafka, config: {seedBrokers: ['k:9092']}, namePolicy: {prefix: '$${namespace}.'}}
- {name: b, driver: kadm, service: kafka, config: {seedBrokers: ['k:9092']}, namePolicy: {prefix: '${ZONE}-$${namespace}.'}}
`
	if _, err := config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), WithoutCredentials: true}); err != nil {
		t.Errorf("webhook: want the unresolved prefix left to the controller, got %v", err)
	}
	_, err := config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), Lookup: lookup(map[string]string{"ZONE": "eu"})})
	if want := `backends[1].namePolicy.prefix: Invalid value: "eu-${namespace}.": overlaps backends[0].namePolicy.prefix`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("controller: want %q, got %v", want, err)
	}
	body = `backends:
- {name: a, driver: kadm, service: kafka, config: {seedBrokers: ['k:9092']}, namePolicy: {prefix: '$${namespace}.'}}
- {name: b, driver: kadm, service: kafka, config: {seedBrokers: ['k:9092']}, namePolicy: {prefix: 'eu-$${namespace}-'}}
`
	_, err = config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), Lookup: lookup(nil)})
	if err == nil || !strings.Contains(err.Error(), "is ambiguous") || strings.Contains(err.Error(), "overlaps") {
		t.Errorf("want only checkPolicy's error, got %v", err)
	}
}

// TestNoticesPolicyOnOneSideOfAService: a backend with no namePolicy on a
// service where another backend has one loads (it commonly serves trusted
// namespaces), and is named in a startup notice with the backends whose
// policy it can bypass; backends of other services are not.
func TestNoticesPolicyOnOneSideOfAService(t *testing.T) {
	c, err := loadForWebhook(t, `
backends:
- {name: kafka, driver: kadm, service: kafka, config: {seedBrokers: ['k:9092']}}
- {name: kafka-tenants, driver: kadm, service: kafka, config: {seedBrokers: ['k:9092']}, namePolicy: {prefix: '$${namespace}.'}}
- {name: kafka-eu, driver: kadm, service: kafka, config: {seedBrokers: ['k:9092']}, namePolicy: {prefix: '$${namespace}.'}}
- {name: other, driver: kadm, config: {seedBrokers: ['o:9092']}}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"backend kafka: has no namePolicy, but shares service kafka with kafka-tenants, kafka-eu, which have one: every namespace that may create Bucketies on kafka can claim any name on the service, those a policy gives to other namespaces included; give kafka a namePolicy, unless only trusted namespaces use it",
	}
	if got := c.Notices(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Notices():\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNamePolicyOverlapReserved: reservedNames makes two overlapping
// policies of one service safe when a backend reserves every name that
// starts with the longer literal text before ${namespace} (every name the
// policies give to two namespaces starts with it): through it no tenant
// gets any of those names. A reservation that leaves any of them out
// (another text, the overlap's own example only, a part of the names
// under the text, a literal * that is no glob) does not do: the pair is
// refused, the error saying what reservation would.
func TestNamePolicyOverlapReserved(t *testing.T) {
	cases := []struct {
		name, a, b string
		// reservedNames of backends a and b.
		ra, rb []string
		want   []string // empty: accepted
	}{
		{"the shorter policy's backend reserves the longer text", "$${namespace}.", "eu-$${namespace}.", []string{"eu-*"}, nil, nil},
		{"the longer policy's backend reserves its own text", "$${namespace}.", "eu-$${namespace}.", nil, []string{"eu-*"}, nil},
		{"a glob covering the text", "$${namespace}.", "eu-$${namespace}.", []string{"e*"}, nil, nil},
		{"a glob with a class covering the text", "$${namespace}.", "eu-$${namespace}.", []string{"[de]u-*"}, nil, nil},
		{"among other reservations", "$${namespace}.", "eu-$${namespace}.", []string{"internal", "eu-*"}, nil, nil},
		{"a namespace name and a dot", "$${namespace}.", "eu.$${namespace}.", []string{"eu.*"}, nil, nil},
		{"the text from a default", "$${backend.zone}-$${namespace}.", "$${namespace}.", nil, []string{"eu-*"}, nil},
		{"a pair the check cannot prove apart", "$${namespace}.$${namespace}.", "eu-$${namespace}.eu-$${namespace}-q.", []string{"eu-*"}, nil, nil},

		{"another text reserved", "$${namespace}.", "eu-$${namespace}.", []string{"us-*"}, nil, []string{
			`overlaps backends[0].namePolicy.prefix ("${namespace}.") on service kafka`,
			`namespace eu-x may claim "eu-x.orders" through backend a, and namespace x through backend b`,
			`or, if backend a need not serve the namespaces whose names under it would start with "eu-", reserve all those names on it, as reservedNames: ["eu-*"]`,
		}},
		{"the example alone reserved", "$${namespace}.", "eu-$${namespace}.", []string{"eu-x.*"}, nil, []string{
			`names starting with "eu-" can go to one namespace through backend a and to another through backend b, and the reservedNames of neither backend reserve them all`,
			`reservedNames: ["eu-*"]`,
		}},
		{"only the names of one form under the text", "$${namespace}.", "eu-$${namespace}.", []string{"eu-*.orders"}, nil, []string{
			`names starting with "eu-" can go to one namespace`, `reservedNames: ["eu-*"]`,
		}},
		{"the exact text, no glob", "$${namespace}.", "eu-$${namespace}.", []string{"eu-"}, nil, []string{
			`namespace eu-x may claim "eu-x.orders"`,
		}},
		{"a literal star", "$${namespace}.", "eu-$${namespace}.", []string{`eu-\*`}, nil, []string{
			`namespace eu-x may claim "eu-x.orders"`,
		}},
		{"the shorter text reserved", "$${namespace}.", "eu-$${namespace}.", []string{"e?-x*"}, nil, []string{
			`can go to one namespace through backend a`,
		}},
		{"the longer policy's backend named in the fix", "eu-$${namespace}.", "$${namespace}.", nil, []string{"us-*"}, []string{
			`or, if backend b need not serve the namespaces whose names under it would start with "eu-", reserve all those names on it, as reservedNames: ["eu-*"]`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := fmt.Sprintf(`backends:
- name: a
  driver: kadm
  service: kafka
  config: {seedBrokers: ['k:9092']}
  defaults: {zone: eu}
  namePolicy: {prefix: %q}
  reservedNames: %s
- name: b
  driver: kadm
  service: kafka
  config: {seedBrokers: ['k:9092']}
  namePolicy: {prefix: %q}
  reservedNames: %s
`, c.a, yamlList(c.ra), c.b, yamlList(c.rb))
			for _, withoutEnv := range []bool{false, true} {
				_, err := config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), Lookup: lookup(nil), WithoutCredentials: withoutEnv})
				if len(c.want) == 0 {
					if err != nil {
						t.Errorf("webhook=%v: want accepted, got %v", withoutEnv, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("webhook=%v: want refused, got accepted", withoutEnv)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("webhook=%v: want the error to contain %q, got %v", withoutEnv, w, err)
					}
				}
			}
		})
	}
}

// yamlList is l as a YAML flow sequence of single-quoted strings.
func yamlList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}
