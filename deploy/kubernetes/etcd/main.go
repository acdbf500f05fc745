// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3), built for
// tpslab's local cluster.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
