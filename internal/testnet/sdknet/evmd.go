package sdknet

import (
	"io"
	"os"
	"os/exec"

	"github.com/tpslab/tpslab/internal/buildcache"
)

// EvmdArchive is Cosmos EVM's own example chain daemon's source (the evmd
// folder of cosmos/evm's release/v0.6.x), which no registry serves.
const EvmdArchive = "evmd-v0.6.x.tar.gz"

// evmdScript builds evmd against the released cosmos/evm v0.6.3 (the
// folder replaces it with its parent, which the archive lacks) and a
// bytedance/sonic that builds with Go 1.26.
const evmdScript = `set -e
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$SRC" -C "$work"
cd "$work"/evmd
go mod edit -dropreplace github.com/cosmos/evm -require github.com/cosmos/evm@v0.6.3
go get github.com/bytedance/sonic@v1.15.5
GOFLAGS=-mod=mod go build -tags netgo -o "$OUT" ./cmd/evmd
`

// Evmd is Cosmos EVM's evmd, built once from its source archive
// ($TPSLAB_EVMD_SOURCE, or shared/sources beside the tpslab tree).
func Evmd(log io.Writer) (string, error) {
	src, err := buildcache.SharedSource(EvmdArchive, "TPSLAB_EVMD_SOURCE")
	if err != nil {
		return "", err
	}
	stamp, err := buildcache.ArchiveStamp("evmd v0.6.x", src, evmdScript)
	if err != nil {
		return "", err
	}
	return buildcache.Command("evmd", stamp, log, func(out string) *exec.Cmd {
		cmd := exec.Command("bash", "-c", evmdScript)
		cmd.Env = append(os.Environ(), "SRC="+src, "OUT="+out)
		return cmd
	})
}
