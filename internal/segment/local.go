package segment

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/report"
)

// Dir is segment i's run directory under the merged run's.
func Dir(out string, i int) string { return filepath.Join(out, "segments", strconv.Itoa(i)) }

// Local runs N segments as processes of this machine: Binary run Args...
// --segment i/N --coordinator URL --out OUT/segments/i. Their logs come to
// Log, each line marked with its segment; what each prints goes to
// OUT/segments/i/stdout.log.
type Local struct {
	Binary string
	Args   []string
	Out    string
	N      int
	Log    io.Writer
}

// Run starts the segments and waits for all of them. An interrupted ctx
// interrupts them (each then writes its partial result, as a run does).
// It returns their directories and how each ended.
func (l Local) Run(ctx context.Context, coordinator string) ([]string, []report.SegmentInfo, []error) {
	dirs := make([]string, l.N)
	infos := make([]report.SegmentInfo, l.N)
	errs := make([]error, l.N)
	var logMu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < l.N; i++ {
		dirs[i] = Dir(l.Out, i)
		infos[i] = report.SegmentInfo{Index: i, Count: l.N, Dir: filepath.Join("segments", strconv.Itoa(i)), Where: "local process"}
		if err := os.MkdirAll(dirs[i], 0o755); err != nil {
			errs[i] = err
			continue
		}
		args := append(append([]string{"run"}, l.Args...), "--segment", fmt.Sprintf("%d/%d", i, l.N),
			"--coordinator", coordinator, "--out", dirs[i])
		cmd := exec.Command(l.Binary, args...)
		stdout, err := os.Create(filepath.Join(dirs[i], "stdout.log"))
		if err != nil {
			errs[i] = err
			continue
		}
		cmd.Stdout = stdout
		pr, pw := io.Pipe()
		cmd.Stderr = pw
		if err := cmd.Start(); err != nil {
			errs[i] = err
			stdout.Close()
			continue
		}
		infos[i].Where = fmt.Sprintf("local process (pid %d)", cmd.Process.Pid)
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				logMu.Lock()
				fmt.Fprintf(l.Log, "[segment %d] %s\n", i, sc.Text())
				logMu.Unlock()
			}
			io.Copy(io.Discard, pr)
		}(i)
		go func(i int) {
			defer wg.Done()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				errs[i] = err
			case <-ctx.Done():
				// As Ctrl-C would: each segment ends its load and writes its result.
				cmd.Process.Signal(os.Interrupt)
				select {
				case err := <-done:
					errs[i] = err
				case <-time.After(2 * time.Minute):
					cmd.Process.Kill()
					errs[i] = <-done
				}
			}
			pw.Close()
			stdout.Close()
		}(i)
	}
	wg.Wait()
	return dirs, infos, errs
}
