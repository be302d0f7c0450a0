// Command kubelet is the real Kubernetes kubelet, built from k8s.io/kubernetes for podkeeper's
// benchmarks and its differential conformance check (make bench, make conformance). It is not part
// of podkeeper.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
