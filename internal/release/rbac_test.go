package release_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/test/controlplane"
)

// rbacAllowlist is every permission the shipped roles grant, one line per
// (role, API group, resource or URL) with its verbs. Widening any role fails
// TestRBACAllowlist until this list is changed too, so every new verb is a
// reviewed diff. Why each line is needed:
var rbacAllowlist = map[string]string{
	// The controller (generated from +kubebuilder:rbac markers).
	// Secrets: cached list/watch of its own, a direct get for a foreign
	// one, create, patch to repair, delete on revoke. Never update.
	`ClusterRole/buckety-controller core/secrets`: "create,delete,get,list,patch,watch",
	// Bucketies: the informer, a fresh get of a claim's owner, a finalizer
	// patch. Status only by patch.
	`ClusterRole/buckety-controller buckety.yolean.se/bucketies`:        "get,list,patch,watch",
	`ClusterRole/buckety-controller buckety.yolean.se/bucketies/status`: "patch",
	// Claims: the informer, create to claim, a fresh get and list (by owner
	// label) where a stale cache could hand a resource to two owners,
	// update to advance the phase with an optimistic lock, delete to
	// release.
	`ClusterRole/buckety-controller buckety.yolean.se/bucketyclaims`: "create,delete,get,list,update,watch",
	// A claim's status: ownerGoneSince, stamped once when its owner is
	// found gone (claims.Janitor).
	`ClusterRole/buckety-controller buckety.yolean.se/bucketyclaims/status`: "patch",
	// Credential records: created before a per-access principal is issued,
	// patched once the Secret holds a secret other than the one recorded
	// (Minting -> Active where the service issues it), deleted after the
	// principal is revoked (access/credential.go); listed by owner.
	`ClusterRole/buckety-controller buckety.yolean.se/bucketycredentials`: "create,delete,get,list,patch,watch",
	// The BucketyBackend view: the leader reads it from its cache, creates
	// one per backend, updates it whole when its status changed, deletes
	// those of backends no longer configured (backendview).
	`ClusterRole/buckety-controller buckety.yolean.se/bucketybackends`: "create,delete,get,list,update,watch",
	// The implicit access: created, patched, deleted by the Buckety
	// reconciler; its finalizer patched by the access reconciler.
	`ClusterRole/buckety-controller buckety.yolean.se/bucketyaccesses`:        "create,delete,get,list,patch,watch",
	`ClusterRole/buckety-controller buckety.yolean.se/bucketyaccesses/status`: "patch",
	// Owner references with blockOwnerDeletion (implicit access -> Buckety,
	// Secret -> access) need update on the owner's finalizers.
	`ClusterRole/buckety-controller buckety.yolean.se/bucketies/finalizers`:       "update",
	`ClusterRole/buckety-controller buckety.yolean.se/bucketyaccesses/finalizers`: "update",
	// Namespaces: kube-system's UID is the default installation name when
	// the config sets none (installation.go), and the labels of a tenant's
	// namespace select its limits (limits.namespaces), read from the
	// cache. Labels and UIDs only; nothing is written.
	`ClusterRole/buckety-controller core/namespaces`:      "get,list,watch",
	`ClusterRole/buckety-controller events.k8s.io/events`: "create,patch",
	// The metrics filter: authenticate and authorize each scraper.
	`ClusterRole/buckety-controller authentication.k8s.io/tokenreviews`:        "create",
	`ClusterRole/buckety-controller authorization.k8s.io/subjectaccessreviews`: "create",
	// Leader election in buckety-system: the Lease lock gets, creates and
	// updates; with shards, each replica lists the member and shard Leases
	// and deletes a departed replica's member Lease (internal/shard); its
	// events.
	`Role/buckety-system/buckety-controller coordination.k8s.io/leases`: "create,delete,get,list,update",
	`Role/buckety-system/buckety-controller core/events`:                "create,patch",

	// The webhook: informers of Bucketies (an access's Buckety) and of
	// accesses (limits.accessesPer*), and the metrics filter.
	`ClusterRole/buckety-webhook buckety.yolean.se/bucketies`:       "list,watch",
	`ClusterRole/buckety-webhook buckety.yolean.se/bucketyaccesses`: "list,watch",
	// The labels of a namespace select its limits (limits.namespaces),
	// read from the webhook's cache.
	`ClusterRole/buckety-webhook core/namespaces`:                           "get,list,watch",
	`ClusterRole/buckety-webhook authentication.k8s.io/tokenreviews`:        "create",
	`ClusterRole/buckety-webhook authorization.k8s.io/subjectaccessreviews`: "create",

	// Scrapers bind this.
	`ClusterRole/buckety-metrics-reader url:/metrics`: "get",

	// Tenant roles, aggregated into edit/admin and view; never /status.
	`ClusterRole/buckety-edit buckety.yolean.se/bucketies`:       "create,delete,deletecollection,get,list,patch,update,watch",
	`ClusterRole/buckety-edit buckety.yolean.se/bucketyaccesses`: "create,delete,deletecollection,get,list,patch,update,watch",
	`ClusterRole/buckety-view buckety.yolean.se/bucketies`:       "get,list,watch",
	`ClusterRole/buckety-view buckety.yolean.se/bucketyaccesses`: "get,list,watch",
	// The BucketyBackend view, bound to system:authenticated.
	`ClusterRole/buckety-backends-view buckety.yolean.se/bucketybackends`: "get,list,watch",
}

// TestRBACAllowlist (issue 14.5): the roles in deploy/kustomize/base grant
// exactly the allowlist.
func TestRBACAllowlist(t *testing.T) {
	base := filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base")
	got := map[string][]string{}
	for _, f := range []string{"rbac/role.yaml", "webhook/rbac/role.yaml", "controller/metrics-reader.yaml", "tenant-roles.yaml", "backends-view.yaml"} {
		b, err := os.ReadFile(filepath.Join(base, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---")) {
			if len(bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(doc), []byte("---")))) == 0 {
				continue
			}
			var r rbacv1.Role // a ClusterRole decodes into the same shape
			var meta struct{ Kind string }
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				var cr rbacv1.ClusterRole
				if err := yaml.UnmarshalStrict(doc, &cr); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				r = rbacv1.Role{ObjectMeta: cr.ObjectMeta, Rules: cr.Rules}
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatal(err)
			}
			role := meta.Kind + "/" + r.Name
			if r.Namespace != "" {
				role = meta.Kind + "/" + r.Namespace + "/" + r.Name
			}
			for _, rule := range r.Rules {
				var keys []string
				for _, u := range rule.NonResourceURLs {
					keys = append(keys, "url:"+u)
				}
				for _, g := range rule.APIGroups {
					if g == "" {
						g = "core"
					}
					for _, res := range rule.Resources {
						keys = append(keys, g+"/"+res)
					}
				}
				for _, k := range keys {
					got[role+" "+k] = append(got[role+" "+k], rule.Verbs...)
				}
			}
		}
	}
	for k, verbs := range got {
		sort.Strings(verbs)
		have := strings.Join(verbs, ",")
		want, ok := rbacAllowlist[k]
		switch {
		case !ok:
			t.Errorf("%s: grants %s, which the allowlist does not have; add it to rbacAllowlist with why, or remove the marker", k, have)
		case have != want:
			t.Errorf("%s: want exactly verbs %s, got %s", k, want, have)
		}
	}
	for k, want := range rbacAllowlist {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: the allowlist has %s, but no role grants it; remove it from rbacAllowlist", k, want)
		}
	}
	// Tenants never write status.
	for k := range got {
		if (strings.HasPrefix(k, "ClusterRole/buckety-edit ") || strings.HasPrefix(k, "ClusterRole/buckety-view ")) && strings.Contains(k, "/status") {
			t.Errorf("%s: tenant roles must not cover status", k)
		}
	}
}
