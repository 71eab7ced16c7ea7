package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallCRDs creates or updates every CustomResourceDefinition in the YAML
// files of dirs and waits until each is Established.
func (cp *ControlPlane) InstallCRDs(ctx context.Context, dirs ...string) error {
	s := scheme.Scheme
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	crds, err := ReadCRDs(dirs...)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		existing := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, crd); err != nil {
				return fmt.Errorf("create CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return err
		default:
			crd.ResourceVersion = existing.ResourceVersion
			if err := c.Update(ctx, crd); err != nil {
				return fmt.Errorf("update CRD %s: %w", crd.Name, err)
			}
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	return cp.waitDiscoverable(ctx, crds)
}

// waitDiscoverable waits until the API server's discovery lists every
// served version of each CRD. Established comes first: a controller
// started between the two finds no REST mapping for a kind it watches
// and exits ("no matches for kind"), as a rebuilt cluster's controller in
// TestRebuiltInstallationReattaches once did.
func (cp *ControlPlane) waitDiscoverable(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cp.RESTConfig)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			var last error
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				list, err := dc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					last = err // not found until the group is served: keep waiting
					return false, nil
				}
				for _, r := range list.APIResources {
					if r.Name == crd.Spec.Names.Plural {
						return true, nil
					}
				}
				last = fmt.Errorf("%s not listed", crd.Spec.Names.Plural)
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("CRD %s: %s not in discovery: %w (%v)", crd.Name, gv, err, last)
			}
		}
	}
	return nil
}

// ReadCRDs reads every CustomResourceDefinition from the .yaml files in dirs.
func ReadCRDs(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
			for {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := dec.Decode(crd); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				if crd.Kind != "CustomResourceDefinition" || !strings.HasPrefix(crd.APIVersion, "apiextensions.k8s.io/") {
					continue
				}
				out = append(out, crd)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", strings.Join(dirs, ", "))
	}
	return out, nil
}
