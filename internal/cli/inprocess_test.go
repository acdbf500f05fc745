package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/kinds/all"
)

// tpslabIn runs the command line in this process, as the tpslab program
// would (cli.Main), with stdout and stderr caught in files: the short tier
// drives the CLI without building or starting a program.
func tpslabIn(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	func() {
		defer func() { os.Stdout, os.Stderr = oldOut, oldErr }()
		code = cli.Main(context.Background(), all.Registry(), args)
	}()
	outF.Close()
	errF.Close()
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return string(o), string(e), code
}
