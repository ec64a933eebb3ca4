// Command etcd is upstream's etcd, unchanged: the same main as go.etcd.io/etcd/server/v3
// main.go at v3.6.5 (etcdmain.Main).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
