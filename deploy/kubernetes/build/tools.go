//go:build tools

// Package build pins the Kubernetes programs tpslab's local cluster runs.
package build

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"

	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
)
