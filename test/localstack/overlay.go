package localstack

import (
	"encoding/base64"
	"fmt"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// overlayKustomization is the local overlay over the rendered release:
// host-network Pods reaching the API server and the backends on 127.0.0.1,
// every listener on a free loopback port, probes on 127.0.0.1, one webhook
// replica (two would collide on the host network), and the webhook called
// by URL (no kube-proxy here).
func overlayKustomization(apiPort string, ports []int, webhookAddr string) string {
	return fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: buckety-system
resources:
- ../release
configMapGenerator:
- name: buckety-controller-config
  files:
  - buckety-controller.yaml
secretGenerator:
- name: buckety-controller-credentials
  envs:
  - credentials.env
patches:
# Host-network Pods are what this environment needs (no kube-proxy, no
# DNS); Pod Security "restricted" forbids them, so it is relaxed here only.
- target: {kind: Namespace, name: buckety-system}
  patch: |
    apiVersion: v1
    kind: Namespace
    metadata:
      name: buckety-system
      labels:
        pod-security.kubernetes.io/enforce: privileged
- target: {kind: Deployment, name: buckety-controller}
  patch: |
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: buckety-controller}
    spec:
      # One host network: a surge Pod would collide on its ports.
      strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}
      template:
        spec:
          hostNetwork: true
          dnsPolicy: ClusterFirstWithHostNet
          containers:
          - name: controller
            imagePullPolicy: IfNotPresent
            args:
            - -c=/etc/buckety
            - --leader-elect=true
            - --metrics-bind-address=127.0.0.1:%[2]d
            - --health-probe-bind-address=127.0.0.1:%[3]d
            env:
            - {name: KUBERNETES_SERVICE_HOST, value: "127.0.0.1"}
            - {name: KUBERNETES_SERVICE_PORT, value: "%[1]s"}
            ports:
            - $patch: replace
            - {name: metrics, containerPort: %[2]d}
            - {name: probes, containerPort: %[3]d}
            livenessProbe:
              httpGet: {host: 127.0.0.1, path: /healthz, port: %[3]d}
            readinessProbe:
              httpGet: {host: 127.0.0.1, path: /readyz, port: %[3]d}
- target: {kind: Deployment, name: buckety-webhook}
  patch: |
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: buckety-webhook}
    spec:
      replicas: 1
      strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}
      template:
        spec:
          hostNetwork: true
          dnsPolicy: ClusterFirstWithHostNet
          containers:
          - name: webhook
            imagePullPolicy: IfNotPresent
            args:
            - -c=/etc/buckety
            - --host=127.0.0.1
            - --port=%[4]d
            - --cert-dir=/certs
            - --metrics-bind-address=127.0.0.1:%[5]d
            - --health-probe-bind-address=127.0.0.1:%[6]d
            - --shutdown-delay=2s
            env:
            - {name: KUBERNETES_SERVICE_HOST, value: "127.0.0.1"}
            - {name: KUBERNETES_SERVICE_PORT, value: "%[1]s"}
            ports:
            - $patch: replace
            - {name: webhook, containerPort: %[4]d}
            - {name: metrics, containerPort: %[5]d}
            - {name: probes, containerPort: %[6]d}
            livenessProbe:
              httpGet: {host: 127.0.0.1, path: /healthz, port: %[6]d}
            readinessProbe:
              httpGet: {host: 127.0.0.1, path: /readyz, port: %[6]d}
- target: {kind: ValidatingWebhookConfiguration, name: buckety-webhook}
  patch: |
    - op: remove
      path: /webhooks/0/clientConfig/service
    - op: add
      path: /webhooks/0/clientConfig/url
      value: https://%[7]s/validate-buckety-yolean-se-v1alpha1-buckety
    - op: remove
      path: /webhooks/1/clientConfig/service
    - op: add
      path: /webhooks/1/clientConfig/url
      value: https://%[7]s/validate-buckety-yolean-se-v1alpha1-bucketyaccess
`, apiPort, ports[0], ports[1], ports[2], ports[3], ports[4], webhookAddr)
}
