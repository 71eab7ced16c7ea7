package s3

import (
	"net"
	"net/url"
	"sort"
	"strings"
)

// ServiceAddresses implements drivers.ServiceAddresser: every endpoint the
// backend sends requests to (its endpoint and any jurisdiction endpoints),
// as lower-case scheme://host:port, or AWS's global namespace for an aws
// backend without an endpoint.
func (c *Config) ServiceAddresses() []string {
	var out []string
	if srv := c.server(); c.Endpoint == "" && srv.globalAddress != "" {
		out = append(out, srv.globalAddress)
	}
	for _, e := range append([]string{c.Endpoint}, sortedValues(c.JurisdictionEndpoints)...) {
		if n := normalizeEndpoint(e); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// normalizeEndpoint is scheme://host:port in lower case, the default port
// of the scheme filled in; "" when e is not an absolute URL.
func normalizeEndpoint(e string) string {
	u, err := url.Parse(strings.TrimSpace(e))
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// LocationParameters implements drivers.Locator: the jurisdiction picks
// the endpoint a bucket lives behind.
func (d *Driver) LocationParameters() []string { return []string{ParamJurisdiction} }
