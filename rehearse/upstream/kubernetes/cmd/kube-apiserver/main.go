// Command kube-apiserver is upstream's kube-apiserver, unchanged: the same main as
// k8s.io/kubernetes cmd/kube-apiserver/apiserver.go at v1.34.4 (the command and its registrations).
package main

import (
	"os"
	_ "time/tzdata" // for timeZone support in CronJob, as upstream's main

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
