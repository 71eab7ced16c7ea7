//go:build tools

// Package kube pins the Kubernetes commands that the tests build. The blank
// imports keep their dependencies in go.sum so `go build` works offline once
// the module cache is warm.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
