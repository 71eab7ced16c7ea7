package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/Yolean/buckety-controller/test/proc"
)

// replicaLabel tells the second replica's Pods apart from the first's.
const replicaLabel = "buckety.yolean.se/e2e-replica"

// secondReplica reads a Deployment (JSON, as `kubectl get -o json` prints
// it) and writes a one-replica copy named NAME-SUFFIX whose Pods run next
// to the original's on one host network: every port the container declares
// (metrics, probes) moves to a free loopback port, in the arguments, the
// probes and the port list. Ports the container does not declare, like a
// port the replicas share with SO_REUSEPORT, are kept. On a node without
// kube-proxy this stands in for scaling a Deployment behind a Service.
func secondReplica(in io.Reader, out io.Writer, suffix string) error {
	var d appsv1.Deployment
	if err := json.NewDecoder(in).Decode(&d); err != nil {
		return fmt.Errorf("read the Deployment: %w", err)
	}
	if !d.Spec.Template.Spec.HostNetwork {
		return fmt.Errorf("deployment %s does not use the host network: scale it instead", d.Name)
	}
	var declared []int32
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			declared = append(declared, p.ContainerPort)
		}
	}
	free, err := proc.FreePorts(len(declared))
	if err != nil {
		return err
	}
	moved := map[int32]int32{}
	for i, p := range declared {
		moved[p] = int32(free[i])
	}
	port := func(p *intstr.IntOrString) {
		if p != nil && p.Type == intstr.Int {
			if n, ok := moved[p.IntVal]; ok {
				*p = intstr.FromInt32(n)
			}
		}
	}
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		for j, a := range c.Args {
			for from, to := range moved {
				if suf := ":" + strconv.Itoa(int(from)); strings.HasSuffix(a, suf) {
					c.Args[j] = strings.TrimSuffix(a, suf) + ":" + strconv.Itoa(int(to))
				}
			}
		}
		for j := range c.Ports {
			c.Ports[j].ContainerPort = moved[c.Ports[j].ContainerPort]
			c.Ports[j].HostPort = 0
		}
		for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if probe != nil && probe.HTTPGet != nil {
				port(&probe.HTTPGet.Port)
			}
		}
	}
	one := int32(1)
	labels := map[string]string{}
	for k, v := range d.Spec.Selector.MatchLabels {
		labels[k] = v
	}
	labels[replicaLabel] = suffix
	tmplLabels := map[string]string{}
	for k, v := range d.Spec.Template.Labels {
		tmplLabels[k] = v
	}
	tmplLabels[replicaLabel] = suffix
	copyOf := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + suffix, Namespace: d.Namespace, Labels: d.Labels},
		Spec:       d.Spec,
	}
	copyOf.Spec.Replicas = &one
	copyOf.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	copyOf.Spec.Template.Labels = tmplLabels
	return json.NewEncoder(out).Encode(copyOf)
}
