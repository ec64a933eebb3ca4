// Command argocd runs one of two upstream Argo CD commands, unchanged: the application controller
// (the default) or, with the first argument repo-server, the repo server. Upstream's cmd/main.go
// picks among all of its commands by the binary's name (or ARGOCD_BINARY_NAME); this main links
// only the two the rehearsal runs.
package main

import (
	"os"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
)

func main() {
	command := appcontroller.NewCommand()
	if len(os.Args) > 1 && os.Args[1] == "repo-server" {
		command = reposerver.NewCommand()
		os.Args = append(os.Args[:1], os.Args[2:]...)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}
