// Package factomnet runs a local Factom network: factomd (built once from
// its source archive) on the LOCAL network, node0 the leader and the
// others followers fed over factomd's own P2P network. factomd binds every
// interface and serves Prometheus on the fixed port 9876, so each node runs
// in a network namespace of its own, joined to the others and to tpslab by
// a host-only bridge with addresses tpslab chose: nothing listens on the
// machine's own interfaces (docs/factom.md).
package factomnet

import (
	"io"
	"os"
	"os/exec"

	"github.com/tpslab/tpslab/internal/buildcache"
)

// Archive is factomd's source (FactomProject/factomd at v6.17.1-2), which
// no registry serves.
const Archive = "factomd-v6.17.1-2.tar.gz"

// Version names the build.
const Version = "factomd v6.17.1-2"

// buildScript builds factomd unchanged; its dependencies come from the Go
// module proxy.
const buildScript = `set -e
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$SRC" -C "$work"
cd "$work"/factomd-*
GOFLAGS=-mod=mod go build -trimpath -o "$OUT" .
`

// Factomd is factomd, built once from its source archive
// ($TPSLAB_FACTOMD_SOURCE, or shared/sources beside the tpslab tree, or
// the mirror).
func Factomd(log io.Writer) (string, error) {
	src, err := buildcache.SharedSource(Archive, "TPSLAB_FACTOMD_SOURCE")
	if err != nil {
		return "", err
	}
	stamp, err := buildcache.ArchiveStamp(Version, src, buildScript)
	if err != nil {
		return "", err
	}
	return buildcache.Command("factomd", stamp, log, func(out string) *exec.Cmd {
		cmd := exec.Command("bash", "-c", buildScript)
		cmd.Env = append(os.Environ(), "SRC="+src, "OUT="+out)
		return cmd
	})
}
