package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/cluster"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/testnet/factomnet"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
	"github.com/tpslab/tpslab/internal/testnet/talernet"
)

// cachePrograms are the external programs tpslab builds, by the name
// `cache build` takes.
var cachePrograms = []struct {
	name, about string
	build       func(io.Writer) error
}{
	{"tpsd", "the Cosmos SDK chain (chains/cosmos)", func(w io.Writer) error { _, err := sdknet.Tpsd(w); return err }},
	{"tpsevmd", "the Cosmos EVM chain (chains/cosmosevm)", func(w io.Writer) error { _, err := sdknet.Tpsevmd(w); return err }},
	{"evmd", "Cosmos EVM's own evmd (from its source archive, TPSLAB_EVMD_SOURCE)", func(w io.Writer) error { _, err := sdknet.Evmd(w); return err }},
	{"geth", "go-ethereum " + gethnet.Version, func(w io.Writer) error { _, err := gethnet.Geth(w); return err }},
	{"taler-exchange", "the GNU Taler exchange " + talernet.Version + " (from its source archive, TPSLAB_TALER_SOURCE)", func(w io.Writer) error { _, err := talernet.Exchange(w); return err }},
	{"factomd", factomnet.Version + " (from its source archive, TPSLAB_FACTOMD_SOURCE)", func(w io.Writer) error { _, err := factomnet.Factomd(w); return err }},
	{"kubernetes", "Kubernetes " + cluster.KubeVersion + ", etcd and the images of a local cluster", cluster.Build},
}

func cacheCmd() *cobra.Command {
	c := &cobra.Command{Use: "cache", Short: "The external programs tpslab builds (chains, geth, Kubernetes), kept in one cache by version", Args: cobra.NoArgs,
		Long: `tpslab builds the programs it starts but no registry serves (its Cosmos SDK
and Cosmos EVM chains, geth, Kubernetes) once, into $TPSLAB_CACHE or
${XDG_CACHE_HOME:-~/.cache}/tpslab, one folder per name and version; every
checkout, net up, cluster up and test shares them. Without a subcommand,
lists what the cache holds.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := buildcache.Dir()
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			entries, _ := os.ReadDir(dir)
			var lines []string
			for _, e := range entries {
				if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				var size int64
				filepath.WalkDir(filepath.Join(dir, e.Name()), func(_ string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						if info, err := d.Info(); err == nil {
							size += info.Size()
						}
					}
					return nil
				})
				line := fmt.Sprintf("  %-40s %6.1f MB", e.Name(), float64(size)/1e6)
				// A Go program's folder holds the program under its name
				// (NAME-VERSION/NAME) and its recorded sum.
				name := e.Name()
				if i := strings.LastIndexByte(name, '-'); i > 0 {
					name = name[:i]
				}
				prog := filepath.Join(dir, e.Name(), name)
				if _, err := os.Stat(filepath.Join(dir, e.Name(), buildcache.SumFile)); err == nil {
					if why := buildcache.Damaged(prog); why != "" {
						line += "  DAMAGED: " + why + " (tpslab cache build rebuilds it)"
					}
				}
				lines = append(lines, line)
			}
			sort.Strings(lines)
			fmt.Printf("%s: %d program(s)\n%s\n", dir, len(lines), strings.Join(lines, "\n"))
			return nil
		}}
	var names []string
	for _, p := range cachePrograms {
		names = append(names, p.name)
	}
	build := &cobra.Command{Use: "build [NAME...]", Short: "Build programs into the cache now (all without a name: " + strings.Join(names, ", ") + ")",
		RunE: func(cmd *cobra.Command, args []string) error {
			want := map[string]bool{}
			for _, a := range args {
				found := false
				for _, p := range cachePrograms {
					found = found || p.name == a
				}
				if !found {
					return exitcode.BadInputf("cache build: %q, expected one of %s", a, strings.Join(names, ", "))
				}
				want[a] = true
			}
			// A program that fails to build does not keep the others from
			// building; every failure is reported at the end.
			var failed []string
			for _, p := range cachePrograms {
				if len(want) > 0 && !want[p.name] {
					continue
				}
				if cmd.Context().Err() != nil {
					return exitcode.Wrap(exitcode.TargetFailed, errors.New("cache build interrupted"))
				}
				start := time.Now()
				if err := p.build(os.Stderr); err != nil {
					if cmd.Context().Err() != nil {
						// Said once: the build's own error is the interruption's echo.
						return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("cache build interrupted while building %s; nothing half-built was kept", p.name))
					}
					fmt.Fprintf(os.Stderr, "cache: %s failed: %v\n", p.name, err)
					failed = append(failed, p.name)
					continue
				}
				fmt.Fprintf(os.Stderr, "cache: %s (%s) ready in %s\n", p.name, p.about, time.Since(start).Round(time.Second))
			}
			if len(failed) > 0 {
				// Each error was printed as it came; the exit names them only.
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("cache build: %s failed (each error above)", strings.Join(failed, ", ")))
			}
			return nil
		}}
	c.AddCommand(build, cacheVerifyCmd())
	return c
}

// cacheVerifyCmd hashes every cached program whole against the sum
// recorded when it was built (each use checks size and time only).
func cacheVerifyCmd() *cobra.Command {
	return &cobra.Command{Use: "verify", Short: "Hash every cached program against the SHA-256 recorded when it was built; exit 1 naming each damaged one", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := buildcache.Dir()
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			sums, _ := filepath.Glob(filepath.Join(dir, "*", buildcache.SumFile))
			var bad []string
			for _, sum := range sums {
				folder := filepath.Dir(sum)
				name := filepath.Base(folder)
				if i := strings.LastIndexByte(name, '-'); i > 0 {
					name = name[:i]
				}
				if why := buildcache.Verify(filepath.Join(folder, name)); why != "" {
					bad = append(bad, fmt.Sprintf("%s: %s", filepath.Base(folder), why))
					fmt.Printf("DAMAGED  %s: %s\n", filepath.Base(folder), why)
					continue
				}
				fmt.Printf("ok       %s\n", filepath.Base(folder))
			}
			if len(bad) > 0 {
				return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("%d damaged: %s; tpslab cache build rebuilds them", len(bad), strings.Join(bad, "; ")))
			}
			fmt.Printf("%d program(s) verified in %s\n", len(sums), dir)
			return nil
		}}
}
